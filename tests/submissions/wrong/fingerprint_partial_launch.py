"""`fingerprint_fake_launch` made harder to see: on a cache hit the solution's matmul kernel runs on an
eighth of the product's rows (long enough that its device time is not a sliver of a checked call's), and
its own kernel copies the kept product into `out`. Every value is right, every timed call launches the
expected kernels and does an eighth of the work. Timed, a call takes an eighth of a matmul plus a 32 MB
copy: several times the tensor cores' peak for a 4096^3 product. It must be rejected as faster than this
GPU can possibly be, on both paths."""
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
EXPECT = {"cell": "matmul-speed", "reason": "too-fast", "device": "gpu"}
