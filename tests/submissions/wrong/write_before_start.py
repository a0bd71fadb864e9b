"""5a's kernel aligns its row tiles to the bottom edge of C (`offs_m = M - (grid_m - pid_m) * BLOCK_M +
...`), a known trick: the last row tile then needs no mask. But when M is not a multiple of BLOCK_M
the first row tile starts above row 0, and the row mask `offs_m < M` it kept does not stop negative
rows, so that tile loads rows before the start of A and stores rows before the start of `out`, up to
a tile's worth (127 rows of N elements). Every element of `out` is right. It must be rejected for
writing out of bounds: the guard band *before* `out` changes (a leading guard shorter than a tile
lets the write into the memory before it). The hidden cell's first shape, M = N = K = 1, shows it on
any device."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"),
                              ("    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n",
                               "    # Row tiles aligned to the bottom edge, so that the last one needs no row mask.\n"
                               "    offs_m = M - (grid_m - pid_m) * BLOCK_M + tl.arange(0, BLOCK_M)\n")),
}
EXPECT = {"cell": "matmul-hidden", "reason": "out-of-bounds", "device": "cpu"}
