"""5a exactly as the solution, plus a debugging line the student forgot: every call prints the grid
size to stderr. Correct and fast. In the notebook's kernel, nbgrader would give 0 points to a graded
cell that printed it; graded checks run the learner's code in the grader's worker, whose stderr never
reaches the cell, so a stray debugging print costs nothing. It must be accepted."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", "\nimport sys\n\n\ndef matmul(a, b, out):"),
        (CH05_LAUNCH, CH05_LAUNCH + '    print(f"matmul: M={M} N={N} K={K}", file=sys.stderr)\n')),
}
EXPECT = {"cells": ["matmul-visible", "matmul-hidden", "matmul-speed"], "device": "cpu"}
