"""How many of a notebook's checks run at once, each in a session, is its chapter's to say (grader/chapters/
grading.toml): chapter 1's checks take seconds and share one session, chapter 5's compile for seconds each and get
the default four; an instructor's LADDER_CHECKS_AT_ONCE still sets every chapter's."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

from grader import chapters, config
from grader.notebooks.nbexec import LadderExecute

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sixteen_cpus(monkeypatch):
    monkeypatch.delenv("LADDER_CHECKS_AT_ONCE", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)), raising=False)
    config.unpin()


def _sessions_for(folder: str, notebook: Path) -> int:
    """The sessions LadderExecute gives `notebook` run from a folder named `folder` (as in a submission)."""
    runner = LadderExecute(config=Config())
    runner.nb = nbformat.read(notebook, as_version=4)
    runner.resources = {"metadata": {"path": f"/graded/student/{folder}"}}
    return config.checks_at_once(runner._chapter_checks_at_once())


def test_each_chapter_gets_its_own_number_of_sessions(sixteen_cpus, monkeypatch):
    one = _sessions_for("01_vector_add", ROOT / "solutions/01_vector_add/01_vector_add.ipynb")
    five = _sessions_for("05_triton_matmul", next((ROOT / "solutions/05_triton_matmul").glob("*.ipynb")))
    default = chapters.grading()["default"]["checks_at_once"]
    assert (one, five) == (1, default) and default > 1
    monkeypatch.setenv("LADDER_CHECKS_AT_ONCE", "3")   # the instructor's setting wins for every chapter
    assert _sessions_for("01_vector_add", ROOT / "solutions/01_vector_add/01_vector_add.ipynb") == 3
    monkeypatch.delenv("LADDER_CHECKS_AT_ONCE")
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(2)), raising=False)
    assert _sessions_for("05_triton_matmul", ROOT / "solutions/05_triton_matmul/05_triton_matmul.ipynb") == 1


def test_a_notebook_of_no_known_chapter_gets_the_default(sixteen_cpus, tmp_path):
    plain = tmp_path / "scratch.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), plain)
    assert _sessions_for("scratch", plain) == chapters.grading()["default"]["checks_at_once"]


def test_the_chapters_grading_table_names_real_chapters_and_whole_numbers(monkeypatch):
    assert chapters.grading()["ch01"] == {"checks_at_once": 1}
    assert set(chapters.grading()) <= set(chapters.names()) | {"default"}
    default = '[default]\nchecks_at_once = 4\n'
    for bad, says in ((default + '[ch99]\nchecks_at_once = 2\n', "[ch99] is no chapter"),
                      (default + '[ch01]\nchecks_at_once = 0\n', "checks_at_once = 0"),
                      (default + '[ch01]\nsessions = 2\n', "sessions = 2"),
                      (default + '[ch01]\ncheck_sessions = 2\n', "check_sessions is now called checks_at_once"),
                      ('[ch01]\nchecks_at_once = 2\n', "[default] needs checks_at_once")):
        chapters.grading.cache_clear()
        monkeypatch.setattr(chapters.resources, "files", lambda name, text=bad: _Text(text))
        with pytest.raises(ValueError, match=re.escape(says)):
            chapters.grading()
    chapters.grading.cache_clear()


class _Text:
    """Stands in for the package's files: every file reads as `text`."""

    def __init__(self, text: str):
        self.text = text

    def joinpath(self, name: str) -> _Text:
        return self

    def read_text(self) -> str:
        return self.text
