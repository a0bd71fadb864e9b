"""grader.learner.cells reads nbgrader's cell metadata by nbgrader's own rules: on every cell of every
notebook the course ships (instructor and released), it agrees with `nbgrader.utils`."""

from __future__ import annotations

import nbformat
import pytest

from conftest import ROOT
from grader.learner import cells

NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb")) + sorted((ROOT / "course").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_cell_metadata_agrees_with_nbgrader(path):
    from nbgrader import utils

    nb = nbformat.read(path, as_version=4)
    assert nb.cells, f"{path} has no cells"
    for index, cell in enumerate(nb.cells):
        where = f"{path.name} cell {index}"
        assert cells.is_grade(cell) == utils.is_grade(cell), where
        assert cells.is_solution(cell) == utils.is_solution(cell), where
        assert cells.is_locked(cell) == utils.is_locked(cell), where
        expected_test = cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)
        assert cells.is_autograded_test(cell) == expected_test, where
        if utils.is_grade(cell):
            assert cells.grade_id(cell) == cell.metadata.nbgrader["grade_id"], where
    graded = cells.graded_cells(nb)
    assert graded and all(c["points"] > 0 for c in graded), f"{path.name}: every graded test cell carries points"
    assert sum(c["points"] for c in graded) == sum(
        float(c.metadata.nbgrader.get("points", 0)) for c in nb.cells
        if c.cell_type == "code" and utils.is_grade(c) and not utils.is_solution(c))


def test_cells_read_from_plain_dicts_too():
    cell = {"cell_type": "code", "source": ["a = 1\n", "b = 2"],
            "metadata": {"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 2}}}
    assert cells.source(cell) == "a = 1\nb = 2"
    assert cells.is_autograded_test(cell) and cells.is_locked(cell) and not cells.is_learner_cell(cell)
    unmarked = {"cell_type": "code", "source": "x", "metadata": {}}
    assert not cells.is_grade(unmarked) and not cells.is_locked(unmarked) and cells.grade_id(unmarked) is None


def test_learner_cells_stop_before_the_named_test_cell():
    path = next((ROOT / "solutions" / "01_vector_add").glob("*.ipynb"))
    every = cells.learner_cells(path)
    assert every[0][0] == cells.SETUP_CELL
    first_test = next(c["grade_id"] for c in cells.graded_cells(path))
    before = cells.learner_cells(path, upto=first_test)
    assert 0 < len(before) < len(every)
    assert every[:len(before)] == before


def test_chapter_of_reads_the_setup_cell_then_the_folder():
    path = next((ROOT / "solutions" / "03_tiling").glob("*.ipynb"))
    assert cells.chapter_of(path) == "ch03"
    assert cells.chapter_of({"cells": []}, "work/05_triton_matmul/copy.ipynb") == "ch05"
    assert cells.chapter_of({"cells": []}, "05_triton_matmul.ipynb") == "ch05"
    assert cells.chapter_of({"cells": []}, "work/notes.ipynb") is None


def test_test_source_names_a_missing_cell():
    path = next((ROOT / "solutions" / "01_vector_add").glob("*.ipynb"))
    with pytest.raises(KeyError, match="no-such-cell"):
        cells.test_source(path, "no-such-cell")
