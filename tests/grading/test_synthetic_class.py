"""The GPU machines' synthetic classes (assets/results/class-grading/synthetic_class.py): 16 students of each
chapter, every kind the class-grading issue names among them, each a notebook nbgrader can read, and an
expected score for each within the chapter's points."""

import importlib.util
import json

import nbformat
import pytest

from conftest import ROOT

SCRIPT = ROOT / "assets" / "results" / "class-grading" / "synthetic_class.py"


@pytest.fixture(scope="module")
def synthetic():
    spec = importlib.util.spec_from_file_location("synthetic_class", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _points(chapter: str) -> float:
    nb = json.loads(next((ROOT / "solutions" / chapter).glob("*.ipynb")).read_text())
    return sum(c["metadata"]["nbgrader"].get("points", 0) for c in nb["cells"]
               if c["metadata"].get("nbgrader", {}).get("grade"))


@pytest.mark.parametrize("chapter", ["01_vector_add", "05_triton_matmul"])
def test_each_class_has_sixteen_students_of_every_kind_and_builds(synthetic, chapter, tmp_path):
    rows = synthetic.students(chapter)
    assert len(rows) == 16 and len({r[0] for r in rows}) == 16
    kinds = {r[0].rsplit("-", 1)[0] for r in rows}
    assert {"correct", "wrong", "crasher", "hanger", "cheater", "tampered"} <= kinds
    assert all(0 <= r[3] <= _points(chapter) for r in rows)
    assert max(r[3] for r in rows) == _points(chapter) and min(r[3] for r in rows) == 0
    halves = synthetic.students(chapter, 1) + synthetic.students(chapter, 2)
    assert sorted(halves) == rows
    for student, package, module, _ in rows:
        nb = nbformat.read(synthetic.build(package, chapter, module, tmp_path / f"{student}.ipynb"), as_version=4)
        nbformat.validate(nb)
