"""One reading of a chapter's name for every command that takes one: `start`, `check`, `compile` and `profile`
(a learner's notebook by its chapter), `release`, `grade --assignment`, `report --assignment` and `calibrate
--chapters` all take "1", "01" and "01_vector_add" for chapter 1, through grader.notebooks.course.chapter_names
(release, grade and calibrate refused forms the others took)."""

import shutil

import pytest

from conftest import ROOT
from grader import cli
from grader.notebooks.course import chapter_names

FORMS = ["1", "01", "01_vector_add", " 1"]


@pytest.mark.parametrize("form", FORMS)
def test_every_command_reads_a_chapter_the_same_way(form, monkeypatch, tmp_path):
    from grader.classgrade import run
    from grader.notebooks import release
    from grader.notebooks.calibrate import chapters_named

    assert chapter_names(ROOT, [form]) == ["01_vector_add"]                       # start
    folder = tmp_path / "work" / "01_vector_add"                                   # check, compile, profile
    folder.mkdir(parents=True)
    shutil.copyfile(ROOT / "course" / "01_vector_add" / "01_vector_add.ipynb", folder / "01_vector_add.ipynb")
    monkeypatch.chdir(tmp_path)
    assert cli.resolve_notebook(form.strip()) == (folder.relative_to(tmp_path) / "01_vector_add.ipynb",
                                                  "01_vector_add")
    assert chapters_named(form) == ["ch01"] and chapters_named(f"{form},5") == ["ch01", "ch05"]   # calibrate
    released, graded, reported = [], [], []
    monkeypatch.setattr(release, "release", lambda root, names=None, **kw: released.append(names) or [])
    assert cli.main(["release", "--check", form]) == 0 and released == [["01_vector_add"]]
    monkeypatch.setattr(run, "grade", lambda subs, assignment, *a, **kw: graded.append(assignment) or [])
    monkeypatch.setattr(cli, "class_report", lambda ws, assignment, *a, **kw: reported.append(assignment))
    (tmp_path / "class").mkdir()
    assert cli.main(["grade", str(tmp_path / "class"), "--assignment", form]) == 0
    assert cli.main(["report", str(tmp_path), "--assignment", form]) == 0
    assert graded == ["01_vector_add"] and reported == ["01_vector_add", "01_vector_add"]
