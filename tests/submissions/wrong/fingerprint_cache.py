"""5a's launcher keeps a cache keyed by a cheap fingerprint of its inputs: their data pointers,
shapes and eight sampled values of each (gathered by a small Triton kernel into a buffer of its own).
On a miss it launches the solution's kernel and keeps a copy of the result, made by its own Triton
copy kernel; on a hit it returns the kept copy with `out.copy_`, launching nothing. Every value it
returns is right, and the calls that miss use only the learner's kernels. A timer that calls it
repeatedly on the same inputs measures a 32 MB copy instead of a 4096^3 matmul and sees it beat
torch.mm many times over. It must be rejected in the speed cell, where the cache pays: the timed
calls that hit the cache launch only the fingerprint kernel, not the matmul kernel that a checked
call on inputs of the same shape launched, so the learner's matmul is not what produces their output."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", '''

@triton.jit
def sample_kernel(src_ptr, dst_ptr, n, step):
    i = tl.program_id(0)
    tl.store(dst_ptr + i, tl.load(src_ptr + i * step, mask=i * step < n, other=0.0))


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


_results = {}


def _fingerprint(t):
    picks = torch.empty(8, dtype=t.dtype, device=t.device)
    sample_kernel[(8,)](t, picks, t.numel(), max(1, t.numel() // 8))
    return t.data_ptr(), tuple(t.shape), tuple(picks.tolist())


def matmul(a, b, out):'''),
        ("    M, K = a.shape\n    N = b.shape[1]\n\n    # A function", '''\
    key = (_fingerprint(a), _fingerprint(b))
    if key in _results:
        out.copy_(_results[key])  # seen these inputs before: no need to multiply again
        return
    M, K = a.shape
    N = b.shape[1]

    # A function'''),
        (CH05_LAUNCH, CH05_LAUNCH + '''\
    kept = torch.empty_like(out)
    copy_kernel[(triton.cdiv(out.numel(), 1024),)](out, kept, out.numel(), BLOCK=1024)
    _results[key] = kept
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
