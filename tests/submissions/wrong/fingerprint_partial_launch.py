"""`fingerprint_fake_launch` made harder to see: on a cache hit the solution's matmul kernel runs on an
eighth of the product's rows (long enough that its device time is not a sliver of a checked call's), and
its own kernel copies the kept product into `out`. Every value is right, every timed call launches the
expected kernels and does an eighth of the work. Timed, a call takes an eighth of a matmul plus a 32 MB
copy: several times the tensor cores' peak for a 4096^3 product. It must be rejected as faster than this
GPU can possibly be, on both paths."""
from submissions.wrong import CH05, CH05_LAUNCH, FIND_TIMED_BATCH, TRITON_COPY_KERNEL, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", FIND_TIMED_BATCH + TRITON_COPY_KERNEL + '''

_kept = {}


def matmul(a, b, out):'''),
        ("    M, K = a.shape\n    N = b.shape[1]\n", '''\
    M, K = a.shape
    N = b.shape[1]
    key = (a.data_ptr(), a._version, b.data_ptr(), b._version, M, N, K)

    def grid(meta):
        return (triton.cdiv(max(1, M // 8), meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    timed = _timed_batch() is not None
    if timed and key in _kept:
        # An eighth of the product's rows: the expected kernel runs, and for long enough to look like work.
        rows = max(1, M // 8)
        matmul_kernel[grid](a[:rows], b, out[:rows], rows, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), out.stride(0), out.stride(1))
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](_kept[key], out, out.numel(), BLOCK=1024)
        return
'''),
        (CH05_LAUNCH, CH05_LAUNCH + '''\
    if timed:
        kept = torch.empty_like(out)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](out, kept, out.numel(), BLOCK=1024)
        _kept[key] = kept
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "too-fast", "device": "gpu"}
