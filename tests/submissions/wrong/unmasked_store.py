"""5a's kernel stores its tile with no mask: `tl.store(c_ptrs, acc)`. Loads stay masked, so every
element inside `out` gets its right value (in the interpreter, programs and the elements of one
store run in order, so the in-range values are written last), but every tile that reaches past the
last row or column writes past the end of `out`, as far as a whole 128 x 256 tile beyond it. It
must be rejected for writing out of bounds: the guard band after `out` changes. Every hidden-cell
shape that is not a multiple of the tile does it, starting with M = N = K = 1 (also the CPU's visible
shapes, but not necessarily the GPU's visible ones, which the autotuner may tile exactly).
A guard band shorter than one tile (64 KiB of fp16 here) leaves the rest of the write in whatever
memory follows."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"),
                              ("tl.store(c_ptrs, acc.to(tl.float16), mask=in_m & in_n)",
                               "tl.store(c_ptrs, acc.to(tl.float16))")),
}
EXPECT = {"cell": "matmul-hidden", "reason": "out-of-bounds", "device": "cpu"}
