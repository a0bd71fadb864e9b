"""grader.classgrade.batchjobs: which of a run's batch jobs each batch system still lists, read from recorded
listings of Slurm, PBS, SGE and LSF (tests/grading/test_slurm.py asks a real Slurm), and what ended jobs wrote."""

import pytest

from grader.classgrade import batchjobs
from grader.classgrade.batchjobs import BatchJobs

# Each system's listing of a user's unfinished jobs, as its UNFINISHED command prints it.
LISTINGS = {
    "slurm": "   1234\n   1235\n",
    "pbs": "1234.pbs-server\n1235.pbs-server\n",
    "sge": ("job-ID  prior   name       user         state submit/start at     queue          slots ja-task-ID\n"
            "---------------------------------------------------------------------------------------------\n"
            "   1234 0.55500 dask-worke alice        r     11/29/2026 14:02:11 gpu.q@node01       4\n"
            "   1235 0.00000 dask-worke alice        qw    11/29/2026 14:02:11                    4\n"),
    "lsf": "1234\n1235\n",
}


@pytest.mark.parametrize("system", sorted(LISTINGS))
def test_each_systems_listing_names_the_unfinished_jobs(system):
    assert batchjobs.unfinished(system, LISTINGS[system]) == {"1234", "1235"}
    assert batchjobs.unfinished(system, "") == set()


def test_a_pbs_job_is_known_by_its_number():
    assert batchjobs.job_number("1234.pbs-server") == "1234" == batchjobs.job_number(" 1234 ")


def _listing(monkeypatch, system: str, script: str):
    """The system's listing command replaced by a shell script: what it prints, and its exit status."""
    monkeypatch.setitem(batchjobs.UNFINISHED, system, (["sh", "-c", script], batchjobs.UNFINISHED[system][1]))


def test_jobs_are_ended_only_when_the_system_lists_none_of_them(monkeypatch, tmp_path):
    jobs = BatchJobs("pbs", ["1234.pbs-server", "1240.pbs-server"], tmp_path)
    _listing(monkeypatch, "pbs", "printf '1240.pbs-server\\n999.pbs-server\\n'")
    assert not jobs.all_ended()
    _listing(monkeypatch, "pbs", "printf '999.pbs-server\\n'")   # another run's job, still queued
    assert jobs.all_ended()


def test_a_system_that_does_not_answer_concludes_nothing(monkeypatch, tmp_path):
    jobs = BatchJobs("slurm", ["1234"], tmp_path)
    _listing(monkeypatch, "slurm", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1")
    assert batchjobs.list_unfinished("slurm") is None and not jobs.all_ended()
    monkeypatch.setitem(batchjobs.UNFINISHED, "slurm", (["ladder-no-such-squeue"], r"^(\d+)"))
    assert batchjobs.list_unfinished("slurm") is None and not jobs.all_ended()


def test_lsf_saying_it_has_no_unfinished_job_is_an_answer(monkeypatch, tmp_path):
    """bjobs says so on stderr, with status 255 in some versions of LSF."""
    _listing(monkeypatch, "lsf", "echo 'No unfinished job found' >&2; exit 255")
    assert batchjobs.list_unfinished("lsf") == set()
    assert BatchJobs("lsf", ["1234"], tmp_path).all_ended()


def test_the_message_quotes_the_last_lines_each_job_wrote(tmp_path):
    (tmp_path / "dask-worker-1234.err").write_text("starting\n\n/bin/python: No module named distributed\n")
    (tmp_path / "dask-worker-1234.out").write_text("")
    (tmp_path / "dask-worker-12345.err").write_text("another job's output\n")
    message = BatchJobs("slurm", ["1234", "1235"], tmp_path).message()
    assert "every slurm job of the run ended before its Dask worker joined" in message
    assert f"(their output: {tmp_path})" in message
    assert "job 1234: dask-worker-1234.err: starting | /bin/python: No module named distributed" in message
    assert "job 1235: wrote nothing" in message and "another job's output" not in message


def test_a_long_output_is_cut_to_its_end(tmp_path):
    (tmp_path / "dask-worker-7.err").write_text("x" * 5000 + "\nthe reason\n")
    message = BatchJobs("slurm", ["7"], tmp_path).message()
    assert message.count("x") <= batchjobs.TAIL_CHARS and "the reason" in message


def test_only_a_dask_jobqueue_cluster_has_batch_jobs():
    class Job:
        def __init__(self, job_id):
            self.job_id = job_id

    class Client:
        def __init__(self, workers):
            self.cluster = type("Cluster", (), {"workers": workers})()

    found = BatchJobs.of(Client({"a": Job("12"), "b": Job(None)}), "slurm", "/logs")
    assert found is not None and found.ids == ["12"] and str(found.logs) == "/logs"
    assert BatchJobs.of(Client({}), "slurm", None) is None            # a local cluster's workers have no job id
    assert BatchJobs.of(object(), "slurm", None) is None              # a scheduler given by address
