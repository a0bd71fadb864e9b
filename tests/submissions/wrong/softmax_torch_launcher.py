"""7a's kernel is written (the solution's), but `softmax` copies torch's softmax into `out` and never
launches it. Every value is right, and on a GPU the speed cell would time torch against itself (1.0x, at
the bar). It must be rejected because the learner's kernel does none of the work: with every launch
made a no-op, `out` is still written."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"
CELLS = {
    "softmax-solution": edited(notebook_cell(CHAPTER_DIR, "softmax-solution"), (
        "    softmax_kernel((rows,), (threads,), (x, out, np.int32(rows), np.int32(cols)))\n",
        "    out.copy_(torch.softmax(x, dim=-1))\n")),
}
EXPECT = {"cell": "softmax-visible", "reason": "kernel-unused", "device": "gpu"}
