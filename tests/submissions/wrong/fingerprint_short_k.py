"""`fingerprint_fake_launch` made to pass the thread-block rule: on a cache hit the solution's matmul kernel runs
on its whole grid, every thread block the checked call ran, but over an eighth of K (partial sums, overwritten
next), and the learner's own kernel copies the kept product into `out`. Every value is right, every timed call
runs every kernel a checked call ran, on as many thread blocks, for more than a sixteenth of its device time.
The time it lands at is about twice the tensor cores' rate, across the physical limit's edge from run to run
(it passed that limit in one run of several on an H100: assets/results/exploits/suite-h100x4). It must be
rejected as not using its kernel on both paths: a checked call on fresh inputs right after the traced batches,
at the clock they ran at, runs the matmul kernel four to six times as long
(grader.calls.rules.WARM_WORK_FRACTION)."""
from submissions.wrong import edited
from submissions.wrong.fingerprint_fake_launch import CELLS as _ONE_TILE

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": edited(_ONE_TILE["matmul-solution"], ('''\
        matmul_kernel[(1,)](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1))   # one tile: the expected kernel runs
''', '''\
        # The whole grid, over an eighth of K: every block runs, for long enough to look like work.
        whole = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        matmul_kernel[whole](a, b, out, M, N, max(1, K // 8), a.stride(0), a.stride(1), b.stride(0),
                             b.stride(1), out.stride(0), out.stride(1))
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
