"""A shared PostgreSQL gradebook (nbgrader's db_url, through SQLAlchemy and psycopg): two `ladder grade`
runs at once, each with two Dask workers, write the same gradebook, on a server this test starts from the
machine's PostgreSQL (skipped, with the reason, where there is none)."""

import subprocess
import sys

import pytest

from conftest import ROOT
from grading.classroom import ASSIGNMENT, CLASS_ENV, make_class, postgres_url  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


HALVES = {"a": {"correct": "correct", "wrong": "wrong"}, "b": {"stub": "stub", "broken": "compile_error"}}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, postgres_url):  # noqa: F811
    """Two `ladder grade` runs at once, each with two Dask workers and half the class, on one gradebook:
    (folder, {half: (returncode, output)}). Graded once for the module's tests."""
    import os

    tmp = tmp_path_factory.mktemp("postgres-class")
    runs = {}
    for name, students in HALVES.items():
        subs = make_class(tmp / f"subs-{name}", students)
        env = dict(os.environ, **CLASS_ENV, LADDER_CACHE_DIR=str(tmp / "cache"))
        runs[name] = subprocess.Popen(
            [sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ASSIGNMENT, "--workspace",
             str(tmp / f"ws-{name}"), "--db", postgres_url, "--workers", "2", "--no-progress"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    outputs = {name: run.communicate(timeout=1200)[0] for name, run in runs.items()}
    return tmp, {name: (runs[name].returncode, out) for name, out in outputs.items()}


def test_two_runs_at_once_record_every_student_in_one_postgres_gradebook(two_runs, postgres_url):  # noqa: F811
    """Pays for the module's two concurrent `ladder grade` runs (50 to 70 s on 2 cores: two Dask clusters grading a
    class between them), which the module's other tests read."""
    tmp, outcomes = two_runs
    for code, out in outcomes.values():
        assert code == 0, out[-3000:]

    from nbgrader.api import Gradebook

    with Gradebook(postgres_url) as gb:
        got = {s.student.id: s.score for s in gb.assignment_submissions(ASSIGNMENT)}
    assert got == {"correct": 3, "wrong": 2, "stub": 0, "broken": 3}

    from grader.classgrade.journal import Journal

    journal = Journal(postgres_url)
    try:
        entries = journal.entries(ASSIGNMENT)
    finally:
        journal.close()
    assert {s: e.score for s, e in entries.items()} == got
    # Either run's CSV is exported from the shared gradebook after its own students: the later one holds all four.
    import csv

    rows = [list(csv.DictReader(open(tmp / f"ws-{n}" / "grades.csv"))) for n in HALVES]
    assert max(len(r) for r in rows) == 4


def test_a_run_again_on_postgres_skips_every_student(two_runs, postgres_url):  # noqa: F811
    """Half a class that the shared gradebook already holds, run again from another machine's workspace."""
    from grading.classroom import ladder_grade

    tmp, outcomes = two_runs
    assert outcomes["a"][0] == 0, outcomes["a"][1][-3000:]
    again = ladder_grade(tmp / "subs-a", tmp / "ws-again", "--db", postgres_url)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{len(HALVES['a'])} student(s) already graded" in again.stdout, again.stdout[-3000:]


GENERATE_SCRIPT = """
import sys
from pathlib import Path
from grader.classgrade import course
from grader.classgrade.identity import folder_files
from grader.classgrade.run import repo_root, source_notebook

workspace, url, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
files = folder_files(source_notebook(repo_root(), "01_vector_add").parent)
for _ in range(rounds):
    course.generate(workspace, "01_vector_add", files, url)
"""


def test_generations_at_once_on_one_gradebook_do_not_collide(tmp_path, postgres_url):  # noqa: F811
    """nbgrader regenerates an assignment without submissions by deleting its notebook row and inserting it
    again; two runs doing that at once on PostgreSQL collided (a foreign-key violation) until generation
    took the gradebook's lock (course.generation_lock). Three processes regenerate it together, rounds
    apart: every generation succeeds."""
    import os

    from sqlalchemy import create_engine, text

    server = create_engine(postgres_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with server.connect() as conn:   # a gradebook of its own: the other tests' holds their students
        conn.execute(text("CREATE DATABASE generations"))
    server.dispose()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = [subprocess.Popen([sys.executable, "-c", GENERATE_SCRIPT, str(tmp_path / f"ws-{i}"),
                              postgres_url.rsplit("/", 1)[0] + "/generations", "4"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for i in range(3)]
    for run in runs:
        out = run.communicate(timeout=600)[0]
        assert run.returncode == 0, out[-3000:]
