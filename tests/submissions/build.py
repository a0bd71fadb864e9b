"""Turn a synthetic submission (a module with CELLS) into a student notebook."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _solution_sources(chapter_dir: str) -> dict[str, str]:
    nb = json.loads(next((ROOT / "solutions" / chapter_dir).glob("*.ipynb")).read_text())
    out = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = "".join(cell["source"])
    return out


def load(chapter: str, name: str):
    return importlib.import_module(f"submissions.{chapter}.{name}")


def build(chapter: str, chapter_dir: str, name: str, dest: Path) -> Path:
    """Write the student notebook for submission `name` to dest (a .ipynb path)."""
    sub = load(chapter, name)
    released = next((ROOT / "course" / chapter_dir).glob("*.ipynb"))
    nb = json.loads(released.read_text())
    solutions = _solution_sources(chapter_dir)
    for gid in getattr(sub, "CELLS", {}):
        if gid not in solutions:
            raise KeyError(f"submission {name} names cell {gid!r}, which is not a solution cell of {chapter_dir}")
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution"):
            continue
        gid = meta["grade_id"]
        if gid in getattr(sub, "CELLS", {}):
            cell["source"] = sub.CELLS[gid]
        elif not getattr(sub, "STUB", False):
            cell["source"] = solutions[gid]
    if hasattr(sub, "tamper"):  # a student who edits the notebook beyond the answer cells
        sub.tamper(nb)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, indent=1))
    return dest


def remove_tests(nb: dict, deleted: str, emptied: str) -> None:
    """What a tampering student does to a notebook: delete the test cell `deleted` and replace the checks
    of the test cell `emptied` by `pass` (grade_ids). Grading restores both from the release."""
    from grader.learner.cells import grade_id

    cells = nb["cells"]
    del cells[[grade_id(c) for c in cells].index(deleted)]
    for cell in cells:
        if grade_id(cell) == emptied:
            cell["source"] = "pass  # tests removed by the student\n"


def launchers(chapter: str, name: str, cell_ids: list[str]) -> dict:
    """Execute a submission's cells (or the solution's) outside a notebook; returns their namespace.

    Each cell is compiled under its own file name registered in linecache, as IPython does, because
    `@triton.jit` reads a function's source with `inspect`, and a jit function that calls another
    looks the caller's module up by `__name__`.
    """
    sub = load(chapter, name)
    solutions = _solution_sources(getattr(sub, "CHAPTER_DIR"))
    ns: dict = {"__name__": f"{chapter}_{name}"}
    exec("import numpy as np\nimport torch\nfrom grader import load_kernel\n"
         "from grader.cuda.gpu import gpu_info\nfrom grader.harness.session import Session\n"
         "session = Session(gpu_info(), None)\n", ns)
    for gid in cell_ids:
        run_cell(getattr(sub, "CELLS", {}).get(gid, solutions[gid]), ns, f"<{chapter} {name} {gid}>")
    return ns


def run_cell(source: str, ns: dict, filename: str) -> None:
    """Execute one cell's source in `ns` under `filename`, registered in linecache as IPython does."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)


def checked_notebook(kind: str, name: str, cells: list[str], dest: Path) -> Path:
    """The student's notebook for entry `name`, cut to what a check of `cells` reads: the setup cell,
    the solution cells and those graded cells, each test cell as the instructor wrote it (the exploit suite,
    tests/notebooks/test_exploits.py, runs it through `ladder check`'s executor on both paths)."""
    from grader.learner import cells as nbcells

    sub = importlib.import_module(f"submissions.{kind}.{name}")
    student = json.loads(build(kind, sub.CHAPTER_DIR, name, dest).read_text())
    instructor = next((ROOT / "solutions" / sub.CHAPTER_DIR).glob("*.ipynb"))
    last = max(i for i, c in enumerate(student["cells"]) if nbcells.grade_id(c) in cells)
    kept = []
    for cell in student["cells"][:last + 1]:
        if nbcells.is_learner_cell(cell):
            kept.append(cell)
        elif nbcells.is_autograded_test(cell) and nbcells.grade_id(cell) in cells:
            cell["source"] = nbcells.test_source(instructor, nbcells.grade_id(cell))
            kept.append(cell)
    student["cells"] = kept
    dest.write_text(json.dumps(student, indent=1))
    return dest
