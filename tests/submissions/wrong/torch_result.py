"""5a's kernel is written (the solution's), but `matmul` never launches it: it copies torch's product
into `out`. Every value is right, so a grader that only compares values passes it, and on a GPU the
speed cell would measure torch against itself (about 1.0x, above the 0.75x bar). It must be rejected
because the learner's kernel does none of the work: replaced by a no-op, the output is unchanged."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"), (CH05_LAUNCH, """\
    # matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
    #                     out.stride(0), out.stride(1))
    out.copy_(a @ b)
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "kernel-unused", "device": "cpu"}
