"""Helpers for class-scale grading tests: building a class of synthetic chapter-1 students, running
`ladder grade`, and a PostgreSQL server of the test's own."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from leftovers import daemons_leave_this_process
from submissions.build import build

ASSIGNMENT = "01_vector_add"
# Short limits, so that a hanging student costs seconds (tests/notebooks/test_grading.py's), and the CPU
# paths on any machine: these tests are about Dask, the journal and the gradebook, their expected scores
# are a CPU's, and `--workers` refuses a GPU that its students would share.
CLASS_ENV = {"LADDER_CELL_TIMEOUT_S": "45", "LADDER_FIRST_CALL_TIMEOUT_S": "20", "LADDER_CALL_TIMEOUT_S": "20",
             "LADDER_FORCE_NO_GPU": "1"}


def make_class(folder: Path, students: dict[str, str]) -> Path:
    """folder/STUDENT.ipynb for each student name -> synthetic submission (tests/submissions/ch01)."""
    for student, submission in students.items():
        build("ch01", ASSIGNMENT, submission, folder / f"{student}.ipynb")
    return folder


def ladder_grade(submissions: Path, workspace: Path, *args: str, env: dict | None = None, timeout: float = 1800,
                 **popen) -> subprocess.CompletedProcess:
    environ = dict(os.environ, **CLASS_ENV, LADDER_CACHE_DIR=str(workspace.parent / "cache"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(submissions), "--assignment", ASSIGNMENT,
                           "--workspace", str(workspace), "--no-progress", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=environ, check=False, **popen)


def scores(csv_path: Path) -> dict[str, float]:
    with open(csv_path) as fh:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)}


def missing_in_ci(why: str) -> None:
    """Something a test needs is missing: under CI (CI=true, as .ci/run and GitHub Actions set) the test
    fails, since CI installs everything it needs; elsewhere it is skipped with the reason."""
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{why} (CI=true: CI must install it)", pytrace=False)
    pytest.skip(why)


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if found:
        return found[-1].parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).resolve().parent if pg_ctl else None


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server from the machine's own installation (Debian's postgresql package), in a
    temporary folder on a free port, with a database `gradebook`. Without one: skipped, saying why, on a
    developer's machine; failed under CI=true, where .ci/run installs it (a CI that lost its server must
    not turn green with three skips).

    Written here rather than with pytest-postgresql because that runs initdb and pg_ctl as the current
    user, and PostgreSQL refuses to run as root, which CI is: as root the server runs as the `postgres`
    account that Debian's package creates.
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing_in_ci("psycopg is not installed (pip install -e '.[dev]')")
    bindir = _pg_bin()
    if bindir is None:
        missing_in_ci("PostgreSQL is not installed (Debian: apt-get install postgresql); .ci/run installs it")
    as_root = os.geteuid() == 0
    if as_root and shutil.which("runuser") is None:
        missing_in_ci("running as root without runuser: cannot start PostgreSQL as another user")
    import tempfile

    # Not under pytest's own temporary folder, which only its owner may enter: the server's account must.
    folder = Path(tempfile.mkdtemp(prefix="ladder-postgres-"))
    data = folder / "data"
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    if as_root:
        shutil.chown(folder, "postgres")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for step in ([str(bindir / "initdb"), "-D", str(data), "-U", "grader", "--auth=trust", "-E", "UTF8"],
                 [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-o",
                  f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"]):
        with daemons_leave_this_process():   # pg_ctl's server is not one of this process's descendants
            done = subprocess.run([*run_as, *step], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(f"PostgreSQL did not start ({Path(step[0]).name}): {done.stdout[-1500:]}{done.stderr[-1500:]}")
    try:
        url = f"postgresql+psycopg://grader@127.0.0.1:{port}"
        import psycopg

        for _ in range(50):
            try:
                with psycopg.connect(f"host=127.0.0.1 port={port} user=grader dbname=postgres", autocommit=True) as conn:
                    conn.execute("CREATE DATABASE gradebook")
                break
            except psycopg.OperationalError:
                time.sleep(0.2)
        yield f"{url}/gradebook"
    finally:
        subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
