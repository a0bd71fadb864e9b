"""Where a class is graded, without grading anyone: the batch jobs dask-jobqueue would submit, the
options an instructor passes, the clear errors, and what makes a recorded grade still valid."""

import copy

import pytest

from grader.classgrade import cluster, identity
from grader.errors import LadderError


@pytest.mark.parametrize("kind, directive", [("slurm", "#SBATCH --gres=gpu:1"), ("pbs", "#PBS -l ngpus=1"),
                                             ("sge", "#$ -l gpu=1"), ("lsf", '#BSUB -gpu "num=1"')])
def test_a_batch_job_is_one_worker_with_one_gpu(kind, directive):
    import dask_jobqueue  # noqa: F401  (the dev extra's: where it is missing the test fails, never skips)
    where = cluster.Where(cluster=kind, cluster_options=cluster.parse_options(["queue=gpu", "cores=8"]))
    import distributed

    batch = cluster._local_or_batch(where, distributed)
    try:
        script = batch.job_script()
    finally:
        batch.close()
    assert directive in script
    assert "--resources GPU=1" in script and "--nthreads 8" in script
    assert "gpu" in script   # the queue


def test_cluster_options_are_read_as_yaml_and_bad_ones_are_named():
    assert cluster.parse_options(["walltime=02:00:00", "cores=8", "job-extra-directives=['--gres=gpu:a100:1']"]) == {
        "walltime": "02:00:00", "cores": 8, "job_extra_directives": ["--gres=gpu:a100:1"]}
    with pytest.raises(LadderError, match="KEY=VALUE"):
        cluster.parse_options(["queue"])


def test_asking_for_gpus_where_there_are_none_says_what_still_works(monkeypatch):
    monkeypatch.setattr(cluster, "visible_gpus", lambda: 0)
    import distributed

    with pytest.raises(LadderError, match="no GPU found.*--workers N"):
        cluster._local_or_batch(cluster.Where(gpus=2), distributed)


def test_workers_refuse_a_gpu_their_students_would_share(monkeypatch):
    from types import SimpleNamespace

    started = []
    local = SimpleNamespace(LocalCluster=lambda **options: started.append(options) or "cluster")
    monkeypatch.setattr(cluster, "visible_gpus", lambda: 1)
    monkeypatch.delenv("LADDER_FORCE_NO_GPU", raising=False)
    with pytest.raises(LadderError, match=r"--workers 2: this machine has 1 GPU\(s\).*share one.*--gpus N"):
        cluster._local_or_batch(cluster.Where(workers=2), local)
    assert not started
    # the CPU paths on a GPU machine (LADDER_FORCE_NO_GPU) use no GPU, so nothing is shared
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    assert cluster._local_or_batch(cluster.Where(workers=2), local) == "cluster"
    assert started == [dict(n_workers=2, threads_per_worker=1, processes=True, resources={"GPU": 1}, memory_limit=0)]


class _FakeLocalCUDACluster:
    """What dask-cuda's LocalCUDACluster does with its workers' preload (26.10): every worker's spec is a copy of
    `new_spec`, whose preload `dask_cuda.initialize` is given `--create-cuda-context`; `scale` asks
    `new_worker_spec` for each GPU."""

    def __init__(self, CUDA_VISIBLE_DEVICES, **options):
        self.options = options
        self.new_spec = {"cls": "Nanny", "options": {"preload": ["dask_cuda.initialize"],
                                                     "preload_argv": ["--create-cuda-context"]}}
        self.worker_spec = {}
        for device in CUDA_VISIBLE_DEVICES.split(","):
            self.worker_spec.update({device: spec for spec in self.new_worker_spec().values()})

    def new_worker_spec(self):
        return {"worker": copy.deepcopy(self.new_spec)}


def test_gpu_workers_create_no_cuda_context_of_their_own(monkeypatch):
    """A worker never runs CUDA itself (grader.classgrade.task); dask-cuda's preload would give each one a context
    on its GPU for the whole class. Checked against dask-cuda 26.10 itself on a CPU (its NVML answers faked): its
    plain cluster's workers each tried to create a context, this one's none."""
    from types import SimpleNamespace

    fake = SimpleNamespace(LocalCUDACluster=_FakeLocalCUDACluster)
    monkeypatch.setattr(cluster, "visible_gpus", lambda: 2)
    monkeypatch.setattr(cluster, "_need", lambda module, extra="class": fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    made = cluster._local_or_batch(cluster.Where(gpus=2), None)
    assert isinstance(made, _FakeLocalCUDACluster) and sorted(made.worker_spec) == ["0", "1"]
    for spec in made.worker_spec.values():
        assert spec["options"]["preload"] == ["dask_cuda.initialize"]
        assert spec["options"]["preload_argv"] == ["--no-create-cuda-context"]
    assert made.options == dict(threads_per_worker=1, resources={"GPU": 1}, memory_limit=0)
    assert made.new_spec["options"]["preload_argv"] == ["--create-cuda-context"]   # each worker's copy changed


def test_one_gpu_starts_no_dask():
    assert not cluster.Where().uses_dask and not cluster.Where(gpus=1).uses_dask
    assert cluster.Where(gpus=2).uses_dask and cluster.Where(workers=2).uses_dask


def test_the_grader_hash_follows_the_bars_and_the_verdict_settings(monkeypatch):
    base = identity.grader_sha256(None)
    assert identity.grader_sha256(b"[1a]\nbar = 0.1\n") != base
    monkeypatch.setenv("LADDER_UNGRADABLE", "full")
    assert identity.grader_sha256(None) != base
    monkeypatch.delenv("LADDER_UNGRADABLE")
    monkeypatch.setenv("LADDER_CACHE_DIR", "/elsewhere")   # where caches live changes no verdict
    assert identity.grader_sha256(None) == base


def test_an_unreachable_gradebook_is_named_without_a_traceback():
    """`ladder grade --db URL` whose server is not there: one message that names the gradebook (password
    hidden) and the driver's reason."""
    import psycopg  # noqa: F401  (the dev extra's: where it is missing the test fails, never skips)
    from grader.classgrade.journal import Journal

    with pytest.raises(LadderError, match=r"cannot open the gradebook at postgresql\+psycopg://grader:\*\*\*@127\.0\.0\.1:1/"
                                          r"gradebook: .*refused"):
        Journal("postgresql+psycopg://grader:secret@127.0.0.1:1/gradebook")


@pytest.mark.parametrize("name, value, message", [
    ("LADDER_CHECKS_AT_ONCE", "many", "LADDER_CHECKS_AT_ONCE='many' is not a whole number"),
])
def test_a_bad_checks_setting_stops_ladder_grade_before_any_student(tmp_path, monkeypatch, capsys, name, value,
                                                                    message):
    from grader.cli import main

    monkeypatch.setenv(name, value)
    (tmp_path / "subs").mkdir()
    code = main(["grade", str(tmp_path / "subs"), "--assignment", "01_vector_add", "--workspace", str(tmp_path / "ws")])
    assert code == 2
    assert message in capsys.readouterr().err


def test_the_summary_prints_the_whole_reason_of_a_student_not_graded():
    from grader.classgrade.job import StudentGrade
    from grader.classgrade.progress import summary

    error = ("not graded: grading failed on the worker (LadderError: nbgrader could not prepare 01_vector_add: "
             "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nOSError: disk full")
    graded = StudentGrade("bob", 9.0, 15.0, {"napkin-test": (1.0, 1.0)}, None, error="1 cell's kernel died")
    lines = summary([StudentGrade("alice", 0.0, 0.0, {}, None, error=error), graded])
    text = "\n".join(lines)
    assert "alice                0/0  [not-graded] (not graded: grading failed on the worker" in text
    assert "    | OSError: disk full" in text and '    |   File "x.py", line 1' in text
    assert "| 1 cell" not in text   # a graded student's note stays on its status line


def test_dask_starts_beside_the_caller_and_an_error_starting_it_is_raised_where_the_client_is_asked_for(monkeypatch):
    import threading

    monkeypatch.setattr(cluster, "visible_gpus", lambda: 0)
    failed = cluster.Starting(cluster.Where(gpus=2))
    with pytest.raises(LadderError, match="no GPU found"):
        failed.client()
    failed.stop()   # nothing was started: nothing to close, and the error is not raised again

    events = []
    release = threading.Event()

    class Client:
        pass

    def client_for(where):
        from contextlib import contextmanager

        @contextmanager
        def started():
            events.append(("started in", threading.current_thread().name))
            release.wait(10)
            yield Client()
            events.append("left")
        return started()

    monkeypatch.setattr(cluster, "client_for", client_for)
    starting = cluster.Starting(cluster.Where(workers=2), then=lambda client: events.append("warmed"))
    events.append("caller goes on")   # while Dask is still starting
    release.set()
    assert isinstance(starting.client(), Client)
    starting.stop_soon()
    starting.stop()
    starting.stop()   # twice is harmless
    started = [e for e in events if isinstance(e, tuple)]
    assert len(started) == 1 and started[0][1].startswith("ladder-dask")   # in a thread of its own
    assert [e for e in events if isinstance(e, str)] == ["caller goes on", "warmed", "left"]


BATCH_START = """
import signal, sys
from grader.classgrade.cluster import Starting, Where
from grader.errors import LadderError

kept = signal.getsignal(signal.SIGINT)
starting = Starting(Where(cluster=sys.argv[1], cluster_options={"cores": 1, "memory": "1GB"}))
try:
    starting.client()
    print("started")
except LadderError as exc:
    print(exc)
finally:
    starting.stop()
print("SIGINT kept" if signal.getsignal(signal.SIGINT) is kept else "SIGINT changed")
"""


@pytest.mark.parametrize("kind, command", [("slurm", "sbatch"), ("pbs", "qsub"), ("sge", "qsub"), ("lsf", "bsub")])
def test_every_batch_system_starts_from_the_thread_dask_starts_in(tmp_path, kind, command):
    """dask-jobqueue sets a signal handler as it is imported, which only the main thread may do: imported first
    in `Starting`'s own thread, every `--cluster` raised "signal only works in main thread" before submitting
    anything. In a fresh process, as `ladder grade` is (here the test process imported it long ago), on a machine
    whose PATH has no batch system: each gets as far as its submit command, says it is missing in one line, and
    leaves Ctrl-C as it was."""
    import os
    import subprocess
    import sys

    import dask_jobqueue  # noqa: F401  (the dev extra's: where it is missing the test fails, never skips)
    from conftest import ROOT

    env = dict(os.environ, PATH=os.path.dirname(sys.executable), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", BATCH_START, kind], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        f"--cluster {kind}: {command} is not on this machine's PATH: run `ladder grade` where {kind} jobs can be "
        "submitted (a login node)", "SIGINT kept"], done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_dask_is_not_started_for_a_run_that_will_grade_no_one(tmp_path, monkeypatch):
    """Every student graded before from the same bytes, or not gradable at all: `ladder grade --gpus N` run again
    starts no worker. A new or changed submission does."""
    from conftest import ROOT
    from grader.classgrade import run
    from grader.classgrade.identity import sha256
    from grader.classgrade.journal import Entry
    from submissions.build import build

    build("ch01", "01_vector_add", "correct", tmp_path / "alice.ipynb")
    (tmp_path / "bob.ipynb").write_text("not a notebook")
    students = {"alice": tmp_path / "alice.ipynb", "bob": tmp_path / "bob.ipynb", "carol": None}
    graded = {"alice": Entry("01_vector_add", "alice", sha256((tmp_path / "alice.ipynb").read_bytes()), "src", "gr",
                             15.0, 15.0, 20.0, "vm GPU 0")}
    def nothing_to_grade(recorded, source):
        return run._nothing_to_grade([run._screened(student, path, recorded, source, "gr", "01_vector_add", ROOT)
                                      for student, path in students.items()])

    assert nothing_to_grade(graded, "src")
    assert not nothing_to_grade(graded, "new source")
    assert not nothing_to_grade({}, "src")
