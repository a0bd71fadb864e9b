"""What runs without a GPU is said once, in grader/harness/without_gpu.py: every setup cell and `ladder doctor`
print it, and the README and each chapter's introduction must say the same."""

import json
import re

from conftest import ROOT
from grader.harness.without_gpu import INTERPRETED, WHAT_STILL_WORKS, interpreted_phrase


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_what_still_works_names_every_interpreted_chapter_and_exercise():
    assert interpreted_phrase() == "chapters 5, 6, 9 and 10 and exercises 7b and 8b"
    assert interpreted_phrase() in WHAT_STILL_WORKS


def test_every_readme_paragraph_on_the_interpreter_says_the_same():
    paragraphs = [_flat(p) for p in (ROOT / "README.md").read_text().split("\n\n")]
    said = [p for p in paragraphs if "Triton's interpreter" in p and "GPU" in p]
    assert len(said) >= 2, "the README's introduction and its `ladder doctor` paragraph"
    for paragraph in said:
        assert interpreted_phrase() in paragraph, paragraph


def _introduction(chapter: int) -> str:
    (path,) = (ROOT / "solutions").glob(f"{chapter:02d}_*/*.ipynb")
    cells = json.loads(path.read_text())["cells"]
    return _flat(next("".join(c["source"]) for c in cells
                      if c["metadata"].get("nbgrader", {}).get("grade_id") == "intro"))


def test_each_chapter_introduction_says_what_runs_in_the_interpreter():
    from grader import chapters

    for chapter in sorted(int(name[2:]) for name in chapters.names()):
        intro = _introduction(chapter)
        if chapter not in INTERPRETED:
            assert "interpreter" not in intro, f"chapter {chapter} has no Triton kernel to interpret"
            continue
        assert "interpreter" in intro, f"chapter {chapter}'s introduction does not say it runs without a GPU"
        for exercise in INTERPRETED[chapter] or ():
            assert re.search(rf"{exercise}\b[^.]*interpreter", intro), (chapter, exercise)


def test_chapter_one_counts_the_three_cells_a_cpu_grades():
    # napkin-test, fusion-napkin-test and diagnose-test (tests/notebooks/test_notebooks_cpu.py runs them)
    assert "three cells are graded (the two napkin-math exercises and reading the profiles" in _introduction(1)
