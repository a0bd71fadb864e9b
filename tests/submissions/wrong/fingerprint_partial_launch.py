"""`fingerprint_fake_launch` made harder to see: on a cache hit the solution's matmul kernel runs on an
eighth of the product's rows (long enough that its device time is not a sliver of a checked call's), and
its own kernel copies the kept product into `out`. Every value is right, every timed call launches the
expected kernels and does an eighth of the work, timed at one and a half to two and a half times the tensor
cores' peak on an H100: too close to the physical limit's allowance (2x the measured torch.mm ceiling) to
be rejected by it every time. It must be rejected on both paths as not using its kernel: the matmul kernel
runs an eighth of the thread blocks a checked call of the same shape ran (grader.calls.rules.enforce_work)."""
from submissions.wrong import edited
from submissions.wrong.fingerprint_fake_launch import CELLS as _ONE_TILE

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": edited(_ONE_TILE["matmul-solution"], ('''\
        matmul_kernel[(1,)](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1))   # one tile: the expected kernel runs
''', '''\
        # An eighth of the product's rows: the expected kernel runs, and for long enough to look like work.
        rows = max(1, M // 8)
        eighth = lambda meta: (triton.cdiv(rows, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        matmul_kernel[eighth](a[:rows], b, out[:rows], rows, N, K, a.stride(0), a.stride(1), b.stride(0),
                              b.stride(1), out.stride(0), out.stride(1))
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
