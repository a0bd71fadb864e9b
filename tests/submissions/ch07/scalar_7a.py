"""7a's previous rung: the solution's kernel with its 16-byte loads switched off (every row read as
4-byte floats), otherwise the same online softmax, shuffles and L2 re-read. Correct everywhere; on an
H100 it ran at about 0.95x torch.softmax on long rows, so it must miss the 1.0x bar every time
(assets/results/calibration/ch07-h100). Everything else is the solution."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"
CELLS = {
    "softmax-solution": edited(notebook_cell(CHAPTER_DIR, "softmax-solution"),
                               ("const bool vec = (cols % 4) == 0;", "const bool vec = false;")),
}
