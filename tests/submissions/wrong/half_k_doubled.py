"""5a's kernel runs its K loop over the first half of the chunks only and doubles the sum, betting
that for random inputs the two halves of every dot product are about the same: half the work, so
about twice the speed. The values are off by far more than the tolerance (each half is an
independent random sum; with a single chunk, everything is simply doubled), so it must be rejected as
a wrong result on every shape."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("for k in range(0, tl.cdiv(K, BLOCK_K)):", "for k in range(0, tl.cdiv(K, 2 * BLOCK_K)):  # half of K"),
        ("tl.store(c_ptrs, acc.to(tl.float16), mask=in_m & in_n)",
         "tl.store(c_ptrs, (2.0 * acc).to(tl.float16), mask=in_m & in_n)  # ... times two")),
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
