"""`ladder start`'s copy (grader.notebooks.workspace) on a course made in a temporary folder: chapters
named every way the CLI accepts, and a learner's own files never overwritten, however often it runs."""

import pytest

from grader.errors import LadderError
from grader.notebooks import workspace


@pytest.fixture
def course(tmp_path):
    """Two chapters in solutions/ and their release in course/ (a notebook and a data file each)."""
    for name in ("01_vector_add", "02_coalescing"):
        (tmp_path / "solutions" / name).mkdir(parents=True)
        (tmp_path / "solutions" / name / f"{name}.ipynb").write_text("{}")
        (tmp_path / "course" / name / "data").mkdir(parents=True)
        (tmp_path / "course" / name / f"{name}.ipynb").write_text(f"released {name}")
        (tmp_path / "course" / name / "data" / "table.csv").write_text("a,b\n")
        (tmp_path / "course" / name / ".ipynb_checkpoints").mkdir()
        (tmp_path / "course" / name / ".ipynb_checkpoints" / "old.ipynb").write_text("not released")
    return tmp_path


@pytest.mark.parametrize("wanted, names", [
    (None, ["01_vector_add", "02_coalescing"]), (["2"], ["02_coalescing"]), (["01"], ["01_vector_add"]),
    (["02_coalescing", "1", "2"], ["02_coalescing", "01_vector_add"]),
])
def test_chapters_are_named_by_number_or_folder(course, wanted, names):
    assert workspace.chapter_names(course, wanted) == names


@pytest.mark.parametrize("wanted", [["3"], ["vector_add"], ["1a"]])
def test_an_unknown_chapter_lists_the_ones_there_are(course, wanted):
    with pytest.raises(LadderError, match=r"no chapter .*: give a number \(1, 2\) or a folder name \(01_vector_add, 02_coalescing\)"):
        workspace.chapter_names(course, wanted)


def test_start_copies_the_release_and_never_overwrites_the_learners_work(course):
    work = course / "work"
    first = workspace.start(course, work, ["1"])
    assert sorted(first.copied) == ["work/01_vector_add/01_vector_add.ipynb", "work/01_vector_add/data/table.csv"]
    assert not (work / "01_vector_add" / ".ipynb_checkpoints").exists()

    (work / "01_vector_add" / "01_vector_add.ipynb").write_text("my answers")
    again = workspace.start(course, work)
    assert again.kept == ["work/01_vector_add/01_vector_add.ipynb"]
    assert again.unchanged == ["work/01_vector_add/data/table.csv"]
    assert sorted(again.copied) == ["work/02_coalescing/02_coalescing.ipynb", "work/02_coalescing/data/table.csv"]
    assert (work / "01_vector_add" / "01_vector_add.ipynb").read_text() == "my answers"


def test_ladder_start_says_what_it_made_and_what_was_already_there(tmp_path, monkeypatch, capsys):
    """`ladder start 1 --dir DIR`: a DIR not there is made and said so (a relative one too, which stopped it with a
    traceback); run again with DIR holding chapters 1 and 3, it says that chapter 1's notebook is there, not
    "every chapter's"; with no chapter named it copies the rest."""
    from grader.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["start", "1", "--dir", "mine", "--keep-instructor-tools"]) == 0
    out = capsys.readouterr().out
    dest = (tmp_path / "mine").resolve()
    assert out.startswith(f"made     {dest} (it did not exist)\ncopied   mine/01_vector_add/01_vector_add.ipynb\n"), out
    assert main(["start", "3", "--dir", "mine", "--keep-instructor-tools"]) == 0
    assert "made " not in capsys.readouterr().out
    assert main(["start", "1", "--dir", "mine", "--keep-instructor-tools"]) == 0
    out = capsys.readouterr().out
    assert f"{dest} already holds the notebook of 01_vector_add, as released: nothing to copy" in out, out
    assert "every chapter" not in out
    assert main(["start", "--dir", "mine", "--keep-instructor-tools"]) == 0
    copied = [line for line in capsys.readouterr().out.splitlines() if line.startswith("copied ")]
    assert copied and not any("01_vector_add" in line or "03_tiling" in line for line in copied)
    assert main(["start", "--dir", "mine", "--keep-instructor-tools"]) == 0
    assert f"{dest} already holds every chapter's notebook, as released: nothing to copy" in capsys.readouterr().out
