"""What `ladder grade` reads as the class: either layout, or both mixed, every student found, and each
submission that cannot be graded named with its reason before any grading (fast: no notebook runs)."""

import shutil

import pytest

from conftest import ROOT
from grader.classgrade.run import collect_submissions, screen
from grader.errors import LadderError

ASSIGNMENT, NOTEBOOK = "01_vector_add", "01_vector_add.ipynb"
RELEASED = ROOT / "course" / ASSIGNMENT / NOTEBOOK


def test_a_mixed_folder_keeps_every_student_and_a_folder_without_a_notebook(tmp_path):
    shutil.copyfile(RELEASED, tmp_path / "flat.ipynb")
    tree = tmp_path / "tree" / ASSIGNMENT / NOTEBOOK
    tree.parent.mkdir(parents=True)
    shutil.copyfile(RELEASED, tree)
    (tmp_path / "nothing" / ASSIGNMENT).mkdir(parents=True)
    found = collect_submissions(tmp_path, ASSIGNMENT, NOTEBOOK)
    assert found == {"flat": tmp_path / "flat.ipynb", "tree": tree, "nothing": None}
    assert screen(found["nothing"], ASSIGNMENT, ROOT)[0] == "nothing-submitted"
    assert screen(found["flat"], ASSIGNMENT, ROOT) is None and screen(tree, ASSIGNMENT, ROOT) is None


def test_a_student_submitted_twice_is_refused(tmp_path):
    shutil.copyfile(RELEASED, tmp_path / "ann.ipynb")
    (tmp_path / "ann" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(RELEASED, tmp_path / "ann" / ASSIGNMENT / NOTEBOOK)
    with pytest.raises(LadderError, match="student ann is submitted twice"):
        collect_submissions(tmp_path, ASSIGNMENT, NOTEBOOK)


@pytest.mark.parametrize("content,reason,words", [
    (b"", "not-a-notebook", "bob.ipynb is empty (0 bytes)"),
    (b'{"cells": [', "not-a-notebook", "bob.ipynb is not a notebook (.ipynb): it is not JSON"),
    (b"{}", "not-a-notebook", "bob.ipynb is JSON but not a Jupyter notebook"),
    ((ROOT / "course" / "05_triton_matmul" / "05_triton_matmul.ipynb").read_bytes(), "other-chapter",
     "bob.ipynb is chapter 5's notebook (05_triton_matmul), not chapter 1's"),
])
def test_a_submission_that_cannot_be_graded_is_named_with_its_reason(tmp_path, content, reason, words):
    path = tmp_path / "deep" / "folder" / "bob.ipynb"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    code, message = screen(path, ASSIGNMENT, ROOT)
    assert code == reason and message.startswith(words), message
    assert str(tmp_path) not in message, "the student sees their file's name, not the instructor's folders"
