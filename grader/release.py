"""`ladder release`: regenerate course/ from solutions/ through nbgrader, or check it is current.

course/ is generated, never edited by hand. `--check` releases into a temporary folder and fails
if any file differs from the committed course/.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .errors import LadderError
from .quiet import captured_stderr
from .settings import RELEASE_DIR, SOURCE_DIR, configure_nbgrader


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


def nbgrader_env() -> None:
    """nbgrader runs `alembic` as a command to set up its database: make the interpreter's own bin
    folder reachable even when `ladder` runs from a virtual environment that is not activated."""
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def _api(root: Path, release_dir: Path, db: Path):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    nbgrader_env()
    c = Config()
    configure_nbgrader(c, root=str(root))
    c.CourseDirectory.release_directory = str(release_dir)
    c.CourseDirectory.db_url = f"sqlite:///{db}"
    return NbGraderAPI(config=c)


def generate(root: Path, release_dir: Path, names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, captured_stderr() as err:
        api = _api(root, release_dir, Path(tmp) / "gradebook.db")
        for name in names:
            result = api.generate_assignment(name, force=True, create=True)
            if not result["success"]:
                raise LadderError(f"nbgrader could not release {name}:\n{result.get('error') or result.get('log')}"
                                  f"\n{err.summary()}")


def _differences(fresh: Path, committed: Path) -> list[str]:
    diffs = []
    fresh_files = {p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file()}
    committed_files = {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()} if committed.is_dir() else set()
    for rel in sorted(fresh_files - committed_files):
        diffs.append(f"missing from {RELEASE_DIR}/: {rel}")
    for rel in sorted(committed_files - fresh_files):
        diffs.append(f"in {RELEASE_DIR}/ but not produced by a release: {rel}")
    for rel in sorted(fresh_files & committed_files):
        if not filecmp.cmp(fresh / rel, committed / rel, shallow=False):
            diffs.append(f"differs from a fresh release: {RELEASE_DIR}/{rel}")
    return diffs


def release(root: Path | None = None, names: list[str] | None = None, check: bool = False) -> list[str]:
    """Release (or with check=True, compare). Returns the list of differences (empty when current)."""
    root = root or repo_root()
    names = names or assignments(root)
    if check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "release"
            generate(root, fresh, names)
            diffs = []
            for name in names:
                diffs += _differences(fresh / name, root / RELEASE_DIR / name)
            return diffs
    target = root / RELEASE_DIR
    for name in names:
        if (target / name).exists():
            shutil.rmtree(target / name)
    generate(root, target, names)
    return []


def graded_cells(notebook_path: Path) -> list[dict]:
    """The autograded test cells of a notebook: grade_id and points."""
    nb = json.loads(notebook_path.read_text())
    cells = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell["cell_type"] == "code" and not meta.get("solution"):
            cells.append({"grade_id": meta["grade_id"], "points": float(meta.get("points", 0))})
    return cells
