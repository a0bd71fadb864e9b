"""Which cells of a notebook are the learner's, and which are the graded tests: nbgrader's cell metadata,
read in one place.

The rules are nbgrader's (`nbgrader.utils.is_grade`, `is_solution`, `is_locked`). They are written
out here rather than imported because importing `nbgrader.utils` imports all of nbgrader, about
5 seconds, which every worker process (one per graded check) would pay to read three booleans;
tests/learner/test_cells.py checks that both give the same answer on every cell of every notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

SETUP_CELL = "setup"   # the grade_id of every chapter's setup cell


def _nb(nb):
    """A notebook as a dict-like: a path is read, a node or dict is used as it is."""
    if isinstance(nb, (str, Path)):
        return json.loads(Path(nb).read_text())
    return nb


def meta(cell) -> dict:
    return (cell.get("metadata", {}) or {}).get("nbgrader", {}) or {}


def source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def grade_id(cell) -> str | None:
    return meta(cell).get("grade_id")


def is_grade(cell) -> bool:
    return bool(meta(cell).get("grade", False))


def is_solution(cell) -> bool:
    return bool(meta(cell).get("solution", False))


def is_locked(cell) -> bool:
    m = meta(cell)
    return not is_solution(cell) and (is_grade(cell) or bool(m.get("locked", False)))


def is_autograded_test(cell) -> bool:
    """A graded test cell: code, graded, not a solution (nbgrader's "autograder tests" cell)."""
    return cell.get("cell_type") == "code" and is_grade(cell) and not is_solution(cell)


def is_learner_cell(cell) -> bool:
    """The code a check rebuilds the learner's work from: the setup cell and every solution cell."""
    return cell.get("cell_type") == "code" and (grade_id(cell) == SETUP_CELL or is_solution(cell))


def learner_cells(nb, upto: str | None = None) -> list[tuple[str, str]]:
    """(name, source) of the setup cell and every solution cell, before the test cell `upto` if given."""
    cells = []
    for index, cell in enumerate(_nb(nb)["cells"]):
        gid = grade_id(cell)
        if upto is not None and gid == upto:
            break
        if is_learner_cell(cell):
            cells.append((gid or f"cell-{index}", source(cell)))
    return cells


def test_source(nb, gid: str) -> str:
    for cell in _nb(nb)["cells"]:
        if grade_id(cell) == gid:
            return source(cell)
    raise KeyError(f"no cell with grade_id {gid!r}")


def graded_cells(nb) -> list[dict]:
    """The autograded test cells of a notebook: grade_id and points."""
    return [{"grade_id": grade_id(c), "points": float(meta(c).get("points", 0))}
            for c in _nb(nb)["cells"] if is_autograded_test(c)]


def chapter_of(nb, path: Path | str = "") -> str | None:
    """"ch01", "ch02", ...: from the setup cell's `from grader.chapters import chNN`, else from the
    notebook's file name or its folder's (`05_triton_matmul`), else None."""
    import re

    for name, src in learner_cells(nb):
        if name == SETUP_CELL:
            m = re.search(r"from\s+grader\.chapters\s+import\s+(ch\d\d)", src)
            if m:
                return m.group(1)
    for name in (Path(path).name, Path(path).parent.name):
        m = re.match(r"(\d\d)_", name)
        if m:
            return f"ch{m.group(1)}"
    return None


def cuda_sources(nb) -> tuple[list[tuple[str, str]], list[int]]:
    """CUDA C sources of a notebook: every string constant assigned to a NAME ending in `_SRC`.

    Returns ([(name, source)], indices of code cells that mention `__global__` outside any such
    constant). The second list lets a test insist that no kernel escapes the compile check.
    """
    import ast

    from .code import as_python

    found, stray = [], []
    for index, cell in enumerate(_nb(nb)["cells"]):
        if cell.get("cell_type") != "code":
            continue
        text = source(cell)
        try:
            tree = ast.parse(as_python(text))
        except SyntaxError:
            if "__global__" in text:
                stray.append(index)
            continue
        covered = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.endswith("_SRC"):
                        found.append((target.id, node.value.value))
                        covered += node.value.value.count("__global__")
        if text.count("__global__") > covered:
            stray.append(index)
    return found, stray
