"""An nbgrader course folder to grade in (source/, submitted/, autograded/, feedback/ and a gradebook):
its configuration, with this course's executor, and an assignment generated in it. Used by the
instructor's workspace (grader.classgrade.record) and by each worker's scratch course
(grader.classgrade.task) alike, so that both see the same nbgrader."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from pathlib import Path

from ..errors import LadderError
from ..harness.quiet import captured_stderr
from ..notebooks.course import nbgrader_env
from ..notebooks.settings import configure_nbgrader


def sqlite_url(workspace: Path) -> str:
    return f"sqlite:///{workspace / 'gradebook.db'}"


def graded_assignment(workspace: Path, assignment: str | None = None) -> tuple[str, str]:
    """(assignment, notebook file name) of a grading workspace, from its source/ folder; the assignment may be
    left out where the workspace holds one."""
    if not workspace.is_dir():
        raise LadderError(f"{workspace}: no such folder (give the folder `ladder grade --workspace` graded in)")
    source = workspace / "source"
    folders = sorted(p.name for p in source.iterdir() if p.is_dir()) if source.is_dir() else []
    if not folders:
        raise LadderError(f"{workspace} is not a grading workspace (no source/ assignment in it): give the folder "
                          "`ladder grade --workspace` graded in")
    if assignment is None:
        if len(folders) > 1:
            raise LadderError(f"{workspace} holds several assignments ({', '.join(folders)}): name one with --assignment")
        assignment = folders[0]
    notebooks = sorted((source / assignment).glob("*.ipynb"))
    if not notebooks:
        raise LadderError(f"{workspace} has no assignment {assignment!r}; it has {', '.join(folders)}")
    return assignment, notebooks[0].name


def workspace_config(workspace: Path, db_url: str | None = None):
    """nbgrader's configuration for a grading workspace (source/, release/, submitted/, autograded/,
    feedback/ under `workspace`; the gradebook at `db_url`, by default gradebook.db there), with this
    course's executor."""
    from traitlets.config import Config

    nbgrader_env()
    c = Config()
    configure_nbgrader(c, root=str(workspace))
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.db_url = db_url or sqlite_url(workspace)
    return c


def api(workspace: Path, db_url: str | None = None, config=None):
    from nbgrader.apps import NbGraderAPI

    c = workspace_config(workspace, db_url)
    if config is not None:
        c.merge(config)
    return NbGraderAPI(config=c)


@contextlib.contextmanager
def generation_lock(db_url: str, assignment: str):
    """Hold the gradebook's lock on generating `assignment`, across every process that shares it.

    nbgrader's SaveCells regenerates an assignment that has no submissions yet by deleting its
    notebook row and inserting it again with its cells. Two `ladder grade` runs that start at once on
    one gradebook interleave those steps: one deletes the notebook while the other inserts cells under
    it, and PostgreSQL refuses with a foreign-key violation. nbgrader has no lock of its own, so the
    generation is serialised here: PostgreSQL's advisory lock (held by a session, released when its
    connection closes, so a killed run never leaves it held), and for SQLite, which has a single writer
    anyway, a file lock beside the database file."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    key = int.from_bytes(hashlib.sha256(f"ladder-generate:{assignment}".encode()).digest()[:8], "big", signed=True)
    if url.get_backend_name() == "postgresql":
        engine = create_engine(db_url)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        finally:
            engine.dispose()
    elif url.get_backend_name() == "sqlite" and url.database:
        import fcntl

        with open(f"{url.database}.generate.lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
    else:   # another database: nbgrader's own behaviour, retried by the caller on a collision
        yield


def generate(workspace: Path, assignment: str, files: dict[str, bytes], db_url: str | None = None) -> None:
    """Write the assignment's source files into `workspace`/source and generate it there (the
    gradebook learns its cells, which autograde restores in every submission)."""
    src = workspace / "source" / assignment
    if src.exists():
        shutil.rmtree(src)
    for name, data in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    with generation_lock(db_url or sqlite_url(workspace), assignment), captured_stderr() as err:
        made = api(workspace, db_url).generate_assignment(assignment, force=True, create=True)
    if not made["success"]:
        if "No such file or directory: 'alembic'" in (made.get("log") or "") + str(made.get("error")):
            raise LadderError(f"nbgrader could not prepare {assignment}: it runs the `alembic` command to create "
                              "a new gradebook, and this process finds none (not on PATH, not beside the alembic "
                              "package). Install nbgrader with its dependencies in the environment this process "
                              "runs in (pip install nbgrader), the same on every worker.")
        raise LadderError(f"nbgrader could not prepare {assignment}: {made.get('error')}\n{err.summary()}\n"
                          f"{(made.get('log') or '')[-3000:]}")
