"""An nbgrader course folder to grade in (source/, submitted/, autograded/, feedback/ and a gradebook):
its configuration, with this course's executor, and an assignment generated in it. Used by the
instructor's workspace (grader.classgrade.record) and by each worker's scratch course
(grader.classgrade.task) alike, so that both see the same nbgrader."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import LadderError
from ..harness.quiet import captured_stderr
from ..notebooks.course import nbgrader_env
from ..notebooks.settings import configure_nbgrader


def sqlite_url(workspace: Path) -> str:
    return f"sqlite:///{workspace / 'gradebook.db'}"


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
    with captured_stderr() as err:
        made = api(workspace, db_url).generate_assignment(assignment, force=True, create=True)
    if not made["success"]:
        raise LadderError(f"nbgrader could not prepare {assignment}: {made.get('error')}\n{err.summary()}\n"
                          f"{(made.get('log') or '')[-3000:]}")
