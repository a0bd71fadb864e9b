"""The gap `fingerprint_short_k` shows, where it pays: chapter 5's naive 32 x 32 kernel, which misses 5a's bar
by four times, keeps each product it computed in a timed batch (keyed by its inputs' data pointers and version
counters, as `fingerprint_fake_launch` does). On a hit it runs the naive kernel on its whole grid over an eighth
of K, then copies the kept product into `out` with a kernel of its own. Every value is right, every timed call
runs every kernel a checked call ran on as many thread blocks, for an eighth of its device time (more than the
sixteenth a checked call on a GPU still ramping up from idle needs allowed), and the time lands near torch.mm's,
well under what a GPU can do. It must be rejected as not using its kernel on both paths: a checked call on fresh
inputs right after the traced batches, at the clock they ran at, runs the kernel eight times as long
(grader.calls.rules.WARM_WORK_FRACTION)."""
from submissions.wrong import CH05, FIND_TIMED_BATCH, TRITON_COPY_KERNEL, ch05_naive_matmul_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell(FIND_TIMED_BATCH + TRITON_COPY_KERNEL + '''

_kept = {}


def _naive_over(a, b, out, K):
    M, N = a.shape[0], b.shape[1]
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    naive_matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              out.stride(0), out.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    key = (a.data_ptr(), a._version, b.data_ptr(), b._version, M, N, K)
    timed = _timed_batch() is not None
    if timed and key in _kept:
        _naive_over(a, b, out, max(1, K // 8))   # the whole grid, an eighth of the work
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](_kept[key], out, out.numel(), BLOCK=1024)
        return
    _naive_over(a, b, out, K)
    if timed:
        kept = torch.empty_like(out)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](out, kept, out.numel(), BLOCK=1024)
        _kept[key] = kept
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
