"""The feedback page of a student whose notebook could not be graded: what happened, in words a student
understands, and what to do. nbgrader writes the page of every graded student from their autograded
notebook; a submission that is not a notebook of the assignment has none, so this page is made the same
way (a notebook, through nbconvert's HTML exporter) from a notebook of one cell that says why.
"""

from __future__ import annotations

from pathlib import Path

RESUBMIT = ("Open your notebook in Jupyter, save it (File > Save Notebook), check that it is this assignment's "
            "`{notebook}`, and submit it again.")

# reason code -> what happened, said to the student
STUDENT_WORDS = {
    "not-a-notebook": "The file you submitted could not be opened as this course's Jupyter notebook, so none of "
                      "its cells could be run or graded.",
    "other-chapter": "The notebook you submitted belongs to another chapter of the course, not to this "
                     "assignment, so its cells could not be graded as this assignment's.",
    "nothing-submitted": "Your submission for this assignment holds no notebook.",
    "not-graded": "Grading failed on the grader's side while your notebook was graded. This says nothing about "
                  "your work: your instructor has the details and will grade it again.",
}
# Reasons the student can fix by submitting again; the others are the grader's to fix.
STUDENT_CAN_FIX = ("not-a-notebook", "other-chapter", "nothing-submitted")


def explanation(assignment: str, notebook: str, reason: str, detail: str, max_score: float) -> str:
    """The page's text (Markdown)."""
    lines = [f"# {assignment}: not graded", "",
             f"**Score: 0 of {max_score:g}.** {STUDENT_WORDS[reason]}", ""]
    if reason in STUDENT_CAN_FIX:
        lines += [f"What the grader found: {detail}", "", RESUBMIT.format(notebook=notebook)]
    return "\n".join(lines) + "\n"


def write_page(path: Path, text: str) -> Path:
    """`text` (Markdown) as an HTML page at `path`, as nbconvert renders a notebook."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    body, _ = HTMLExporter().from_notebook_node(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path
