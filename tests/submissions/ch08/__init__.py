"""Chapter 8's synthetic students. Their cells are the solution's with a change, built with
submissions.wrong's `notebook_cell` and `edited`, so that they follow the solution when it is edited."""

from __future__ import annotations

from submissions.wrong import edited  # noqa: F401  (re-exported for the students)
from submissions.wrong import notebook_cell as _notebook_cell

CHAPTER_DIR = "08_should_you_write_it"


def notebook_cell(grade_id: str) -> str:
    """The source of any cell of chapter 8's solution notebook (solution regions' markers removed)."""
    return _notebook_cell(CHAPTER_DIR, grade_id)
