"""5a's kernel builds its store mask afresh with `<=` for the rows: `(offs_m[:, None] <= M) & in_n`.
The loads keep the right masks, so every element of `out` is right, but a tile that covers row M
writes that row too: N elements just past the end of `out` (zeros, since row M of A loads as zero).
It must be rejected for writing out of bounds, by the guard band after `out`. On a CPU every shape
shows it; on a GPU only shapes with M not a multiple of the tile the autotuner picked, so the hidden
cell (which starts with M = N = K = 1) is the one that must catch it."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"),
                              ("tl.store(c_ptrs, acc.to(tl.float16), mask=in_m & in_n)",
                               "tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] <= M) & in_n)")),
}
EXPECT = {"cell": "matmul-hidden", "reason": "out-of-bounds", "device": "cpu"}
