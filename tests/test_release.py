"""course/ is a fresh nbgrader release of solutions/, and its stubs are the friendly kind."""

import json

import pytest

from conftest import ROOT
from grader.release import assignments, graded_cells, release


def test_committed_course_matches_a_fresh_release():
    diffs = release(ROOT, check=True)
    assert not diffs, "course/ is out of date; run `ladder release` and commit:\n" + "\n".join(diffs)


def test_release_check_notices_a_hand_edit(tmp_path):
    import shutil
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "solutions", copy / "solutions")
    shutil.copytree(ROOT / "course", copy / "course")
    shutil.copy(ROOT / "nbgrader_config.py", copy)
    nb = copy / "course/01_vector_add/01_vector_add.ipynb"
    nb.write_text(nb.read_text().replace("Vector add", "Vector sum", 1))
    diffs = release(copy, check=True)
    assert any("differs from a fresh release" in d for d in diffs)


@pytest.mark.parametrize("name", assignments(ROOT))
def test_released_notebook_hides_tests_and_solutions(name):
    nb = next((ROOT / "course" / name).glob("*.ipynb"))
    text = nb.read_text()
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    source = next((ROOT / "solutions" / name).glob("*.ipynb"))
    assert graded_cells(nb) == graded_cells(source), "graded cells must survive the release unchanged"
    assert sum(c["points"] for c in graded_cells(nb)) > 0


def test_cuda_solution_markers_live_in_c_comments():
    from grader.source import cuda_sources_in_notebook
    checked = 0
    for nb in (ROOT / "solutions").glob("*/*.ipynb"):
        for name, src in cuda_sources_in_notebook(nb)[0]:
            for line in src.splitlines():
                if "BEGIN SOLUTION" in line or "END SOLUTION" in line:
                    checked += 1
                    assert line.strip().startswith("//"), f"{nb.name} {name}: marker outside a C comment: {line!r}"
    assert checked, "no solution markers found inside CUDA sources"
