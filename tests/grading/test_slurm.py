"""`ladder grade --cluster slurm` on a real Slurm (tests/grading/slurm.py starts one for the session): a small
class graded in batch jobs that Slurm ran, with the scores, the CSV and Slurm's own record of the jobs."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from grading.classroom import ASSIGNMENT, CLASS_ENV, make_class, scores
from grading.slurm import NODE, slurm  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


def test_a_class_is_graded_in_slurm_batch_jobs(tmp_path, slurm):  # noqa: F811
    """Two students, two batch jobs of one worker each, as `--cluster slurm --jobs 2` asks on any cluster (the
    defaults: one GPU, 4 cores, 32 GB a job). Each student's row names the Slurm job that graded it, and Slurm's
    job-completion record holds those jobs, run on its node.

    About 50 s on 2 cores, nearly all of it the two students' own grading on the CPU (20-25 s each, side by side,
    as any `ladder grade` of them takes); Slurm starts in about 1 s and runs a job within a second of its
    submission (SchedulerParameters=sched_interval=1)."""
    subs = make_class(tmp_path / "subs", {"correct": "correct", "stub": "stub"})
    workspace, typed_in = tmp_path / "ws", tmp_path / "instructor"
    typed_in.mkdir()
    env = dict(os.environ, **CLASS_ENV, **slurm.env, LADDER_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ASSIGNMENT,
                          "--workspace", str(workspace), "--cluster", "slurm", "--jobs", "2", "--no-progress"],
                         cwd=typed_in, env=env, capture_output=True, text=True, timeout=600, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    assert scores(workspace / "grades.csv") == {"correct": 3.0, "stub": 0.0}, out[-3000:]

    import csv

    with open(workspace / "grades.csv") as fh:
        rows = {row["student_id"]: row for row in csv.DictReader(fh)}
    assert {s: rows[s]["reason"] for s in rows} == {"correct": "graded", "stub": "graded"}

    from grader.classgrade.journal import Journal
    from grader.classgrade.course import sqlite_url

    journal = Journal(sqlite_url(workspace.resolve()))
    try:
        graded_in = {student: entry.worker for student, entry in journal.entries(ASSIGNMENT).items()}
    finally:
        journal.close()
    jobs = {job["JobID"]: job for job in slurm.completed_jobs()}
    for student, worker in graded_in.items():
        assert ", Slurm job " in worker, (student, worker, out[-3000:])
        job = jobs[worker.rsplit(" ", 1)[1]]
        assert job["NodeList"] == NODE and job["JobName"] == "dask-worker", job
    # the jobs' output went to the workspace, not to the folder the command was typed in
    assert sorted(p.suffix for p in (workspace / "jobs").iterdir()) and not list(typed_in.iterdir())


def test_a_job_slurm_refuses_stops_the_run_with_slurms_reason(tmp_path, slurm):  # noqa: F811
    """A batch job the scheduler will not take (here two GPUs where the node has one a job) was only logged by
    dask-jobqueue's event loop, and `ladder grade` waited for workers for ever: it stops, with sbatch's reason."""
    subs = make_class(tmp_path / "subs", {"solo": "stub"})
    env = dict(os.environ, **CLASS_ENV, **slurm.env, LADDER_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ASSIGNMENT,
                          "--workspace", str(tmp_path / "ws"), "--cluster", "slurm", "--no-progress",
                          "--cluster-option", "job_extra_directives=['--gres=gpu:9']"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert ("ladder grade: --cluster slurm: the batch system refused the worker jobs: sbatch: error: Batch job "
            "submission failed: Requested node configuration is not available") in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "ws" / "grades.csv").exists() and not slurm.run("squeue", "--noheader").strip()


def test_jobs_that_end_before_their_workers_join_end_the_run_with_what_they_said(tmp_path, slurm):  # noqa: F811
    """Batch jobs Slurm ran, but that ended before their Dask workers joined (a prologue that fails, as a missing
    module or python would): dask-jobqueue never asks Slurm about them, and `ladder grade` waited for a worker for ever.
    It asks Slurm (grader.classgrade.batchjobs), and each student gets a row that says what the jobs wrote."""
    subs = make_class(tmp_path / "subs", {"first": "stub", "second": "stub"})
    workspace = tmp_path / "ws"
    env = dict(os.environ, **CLASS_ENV, **slurm.env, LADDER_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ASSIGNMENT,
                          "--workspace", str(workspace), "--cluster", "slurm", "--jobs", "2", "--no-progress",
                          "--cluster-option", "job_script_prologue=['echo no python for the worker here >&2', "
                                              "'exit 3']"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)
    out = run.stdout + run.stderr
    assert "Traceback" not in out, out[-3000:]

    import csv

    with open(workspace / "grades.csv") as fh:
        rows = {row["student_id"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {"first", "second"}, out[-3000:]
    for row in rows.values():
        assert row["reason"] == "not-graded", row
        assert "every slurm job of the run ended before its Dask worker joined" in row["reason_message"], row
        assert "no python for the worker here" in row["reason_message"], row
    assert not slurm.run("squeue", "--noheader").strip()
