"""9b's kernel ignores the scales: it returns the plain product of the codes, as if every scale were 1. Right
wherever the data happen to fit e4m3 unscaled (scales of 1); the grader's scales are drawn between 2^-12 and
2^-4, a different one for every row and group of a, every block of b, so it is far off. It must be rejected:
a wrong result."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {"gemm-solution": edited(notebook_cell(CHAPTER_DIR, "gemm-solution"),
                                 ("acc += tl.dot(a, b) * a_scale[:, None] * b_scale[None, :]", "acc += tl.dot(a, b)"))}
EXPECT = {"cell": "gemm-visible", "reason": "wrong-result", "device": "cpu"}
