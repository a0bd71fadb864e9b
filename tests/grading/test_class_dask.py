"""A class graded on Dask workers (local processes, no GPU): a worker killed mid-student has that student
graded again on another worker, with the reason recorded; a student who kills every worker is given up
after the retry limit, costing no one else; and a whole run killed mid-class loses no recorded grade
and, run again, grades only the rest (and, once more, only a submission that changed). How a student's
time is split is checked on tests/notebooks/test_grading.py's class, graded on the same two workers. On a
CPU only the napkin-math cells score (correct: 3 of 15)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from grading.classroom import ASSIGNMENT, CLASS_ENV, ladder_grade, make_class, scores

pytestmark = pytest.mark.slow

CPU_SCORES = {"correct": 3, "wrong": 2, "stub": 0, "compile_error": 3}


def _journal(db) -> dict[str, dict]:
    try:
        with sqlite3.connect(db) as conn:
            conn.row_factory = sqlite3.Row
            return {r["student"]: dict(r) for r in conn.execute("SELECT * FROM ladder_graded")}
    except sqlite3.OperationalError:   # no table yet
        return {}


def test_a_dead_worker_has_its_student_graded_again_and_a_serial_killer_is_given_up(tmp_path):
    """About 50 s on 2 cores: a class graded on a Dask cluster whose workers are killed mid-grading, so that students
    are graded again."""
    subs = make_class(tmp_path / "subs", {"correct": "correct", "once": "worker_killer_once",
                                          "always": "worker_killer"})
    marks = tmp_path / "marks"
    marks.mkdir()
    # No checks ahead of the notebook (LADDER_CHECKS_AT_ONCE=1, as on a 2-core machine): a check run ahead
    # executes the killer's cell in a checking process of its own, where the once-killer would spend its
    # one kill, and on a machine of many cores (16, an H100's) the worker then never died.
    proc = ladder_grade(subs, tmp_path / "ws", "--workers", "2", "--retries", "1",
                        env={"LADDER_TEST_KILL_ONCE": str(marks), "LADDER_CHECKS_AT_ONCE": "1"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]   # one student could not be graded
    assert (marks / "killed").is_file(), "the once-killer never ran"
    assert scores(tmp_path / "ws" / "grades.csv") == {"correct": 3, "once": 3, "always": 0}, out[-3000:]
    assert "ended when its worker died; graded again" in out, out[-3000:]
    assert "not graded: the worker grading this student died 2 time(s)" in out, out[-3000:]
    journal = _journal(tmp_path / "ws" / "gradebook.db")
    assert set(journal) == {"correct", "once"}     # the killer is not recorded: the next run tries it again
    assert journal["once"]["attempts"] == 2 and "worker died" in journal["once"]["notes"]
    assert journal["correct"]["attempts"] == 1


def test_a_killed_run_keeps_its_grades_the_next_run_grades_only_the_rest_and_a_changed_submission_again(tmp_path):
    """Three runs of one class: the first killed after its first recorded student, the second grading only
    the rest, the third only the student whose submission changed since. One class for the three, since
    each grading of a student costs seconds of CPU.
    About 60 to 100 s on 2 cores."""
    subs = make_class(tmp_path / "subs", {name: name for name in CPU_SCORES})
    ws = tmp_path / "ws"
    env = dict(os.environ, **CLASS_ENV, LADDER_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.Popen([sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ASSIGNMENT,
                            "--workspace", str(ws), "--no-progress"], cwd=ROOT, env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not _journal(ws / "gradebook.db") and time.time() < deadline and run.poll() is None:
        time.sleep(0.5)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    first = _journal(ws / "gradebook.db")
    assert 1 <= len(first) < len(CPU_SCORES), f"killed after {len(first)} student(s): the test needs a run cut short"

    proc = ladder_grade(subs, ws)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert f"{len(first)} student(s) already graded" in proc.stdout
    assert scores(ws / "grades.csv") == CPU_SCORES
    after = _journal(ws / "gradebook.db")
    for student, row in first.items():
        assert after[student]["graded_at"] == row["graded_at"], f"{student} was graded again"
    last_of_first_run = max(row["graded_at"] for row in first.values())
    for student in set(CPU_SCORES) - set(first):
        row = after[student]
        notes = json.loads(row["notes"])
        assert row["attempts"] == 1 and row["graded_at"] > last_of_first_run, (student, row)
        assert isinstance(notes, list) and not any("worker" in note for note in notes), (student, notes)

    # The stub's author submits again: the next run grades that student alone, and keeps everyone else's grade.
    make_class(subs, {"stub": "correct"})
    proc = ladder_grade(subs, ws)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert f"{len(CPU_SCORES) - 1} student(s) already graded" in proc.stdout, proc.stdout[-3000:]
    assert scores(ws / "grades.csv") == {**CPU_SCORES, "stub": CPU_SCORES["correct"]}
    final = _journal(ws / "gradebook.db")
    for student in set(CPU_SCORES) - {"stub"}:
        assert final[student]["graded_at"] == after[student]["graded_at"], f"{student} was graded again"
    assert final["stub"]["graded_at"] > after["stub"]["graded_at"]
