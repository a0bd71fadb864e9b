"""7b without the epsilon: `r * rsqrt(mean(r^2)) * w`. On rows of ordinary size the epsilon (1e-6)
changes nothing a test could see, but an all-zero row becomes 0/0 = NaN and a row of values around 1e-3
comes out several times too large. The grader's rows span 10^-3.5 to 10 in scale and row 1 is zero, so
it must be rejected as a wrong result, on a CPU too (Triton's interpreter)."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"
CELLS = {
    "norm-solution": edited(notebook_cell(CHAPTER_DIR, "norm-solution"),
                            ("tl.sum(r * r, axis=0) / hidden + eps)", "tl.sum(r * r, axis=0) / hidden)")),
}
EXPECT = {"cell": "norm-visible", "reason": "wrong-result", "device": "cpu"}
