"""5a's launcher keeps each product it computed in a timed batch (it finds the grader's `run_batch` on
the stack), keyed by its inputs' data pointers and version counters (any in-place write bumps a tensor's
version, so a kept product is never stale). On a hit it launches the solution's matmul kernel on a single
program (one 128 x 128 tile, so that the kernel the grader expects does run) and copies the kept product
into `out` with its own kernel. Every value is right and every timed call launches the kernels a checked
call launches, and its own kernels (the tile and the copy) keep the device busy for more than a sliver of a
checked call's time. It must be rejected as not using its kernel, on both paths: in the traced batch after
the timing its matmul kernel runs on a couple of thread blocks per call, where a checked call of the same
shape ran hundreds (grader.calls.rules.enforce_work)."""
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
    timed = _timed_batch() is not None
    if timed and key in _kept:
        matmul_kernel[(1,)](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1))   # one tile: the expected kernel runs
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
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
