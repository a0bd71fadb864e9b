"""The course as nbgrader sees it: where its folders are, which files belong to no release, and the
settings that releasing needs (grader.notebooks.settings adds those that running notebooks needs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import LadderError

COURSE_ID = "kernel-ladder"
SOURCE_DIR = "solutions"
RELEASE_DIR = "course"

# Files that belong to no release or submission: Jupyter's checkpoints, caches, build products.
IGNORED = (".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.cubin", "*.ptx", "*.o", ".triton",
           ".DS_Store")


def repo_root(start: Path | None = None) -> Path:
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "nbgrader_config.py").is_file() and (d / SOURCE_DIR).is_dir():
            return d
    raise LadderError(f"not inside the course repository: no nbgrader_config.py with a {SOURCE_DIR}/ "
                      f"folder above {here}")


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / SOURCE_DIR).iterdir()
                  if p.is_dir() and any(p.glob("*.ipynb")) and not p.name.startswith("."))


def chapter_names(root: Path, wanted: list[str] | None) -> list[str]:
    """Assignment folders for chapter arguments: "1", "01", "01_vector_add" (default: all). The one reading of a
    chapter's name for every command that takes one (start, check, compile, profile, release, grade, report,
    calibrate)."""
    names = assignments(root)
    if not wanted:
        return names
    out = []
    for w in wanted:
        w = w.strip()
        match = [n for n in names if n == w or (w.isdigit() and n.startswith(f"{int(w):02d}_"))]
        if not match:
            numbers = ", ".join(str(int(n.split("_")[0])) for n in names)
            raise LadderError(f"no chapter {w!r}: give a number ({numbers}) or a folder name ({', '.join(names)})")
        out += [m for m in match if m not in out]
    return out


def nbgrader_env() -> None:
    """nbgrader runs `alembic` as a command to set up a new gradebook: make the folder that holds it
    reachable even when `ladder` runs from a virtual environment that is not activated, or in a process
    whose PATH lacks it (a Dask worker on a GPU machine failed its first student that way). And ask alembic for
    the version it wants in this process instead (_alembic_head)."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = _alembic_head
    have = os.environ.get("PATH", "").split(os.pathsep)
    for folder in reversed(_command_folders("alembic")):
        if folder not in have:
            os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
            have.insert(0, folder)


def _alembic_head() -> str:
    """nbgrader.api.get_alembic_version, the version a new gradebook is stamped with, asked of alembic's own
    ScriptDirectory in this process. Why: nbgrader runs `alembic heads` for it, a new Python importing alembic
    and SQLAlchemy for every new gradebook (3.2 s on a 2-core machine, against 0.1 s in process), and a class
    grading makes one for its workspace and one for each worker's scratch course before that worker's first
    student. Same answer: the first head, nbgrader's migrations' only one."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:   # nbgrader's own ini, as its command gets
        return ScriptDirectory.from_config(Config(ini)).get_heads()[0]


def _command_folders(command: str) -> list[str]:
    """Folders that hold an installed package's command: the interpreter's own bin folder, the scripts
    folder of its installation, where the package's record puts it, and DIR/bin beside the package for
    `pip install --target DIR`, whose record names a path relative to another prefix. The interpreter's
    folder always, as before; the others only where the command is there."""
    import sysconfig

    found = [os.path.dirname(sys.executable), sysconfig.get_path("scripts")]
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        package = distribution(command)
        found += [str(Path(package.locate_file(f)).resolve().parent) for f in package.files or ()
                  if f.name == command and "bin" in f.parts]
        found.append(str(Path(str(package.locate_file(command))).resolve().parent / "bin"))
    except (ImportError, PackageNotFoundError):
        pass
    folders = []
    for i, folder in enumerate(found):
        if folder and folder not in folders and (i == 0 or os.path.isfile(os.path.join(folder, command))):
            folders.append(folder)
    return folders


def configure_course(c, root: str | None = None) -> None:
    """The course's folders, what a release leaves out, and the released stub, on a traitlets Config."""
    if root is not None:
        c.CourseDirectory.root = root
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = SOURCE_DIR
    c.CourseDirectory.release_directory = RELEASE_DIR
    # Never copy build products or caches into a release or a submission.
    c.CourseDirectory.ignore = list(IGNORED)
    # The released stub for code solutions. The grader recognises it inside CUDA C strings too.
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
