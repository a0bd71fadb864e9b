"""5a's launcher keeps a cache keyed by a cheap fingerprint of its inputs: their data pointers,
shapes and eight sampled values of each (gathered by a small Triton kernel into a buffer of its own).
On a miss it launches the solution's kernel and keeps a copy of the result, made by its own Triton
copy kernel; on a hit it returns the kept copy with `out.copy_`, launching nothing. Every value it
returns is right, and the calls that miss use only the learner's kernels. A timer that calls it
repeatedly on the same inputs measures a 32 MB copy instead of a 4096^3 matmul and sees it beat
torch.mm many times over. It must be rejected in the speed cell, where the cache pays: the timed
calls that hit the cache launch only the fingerprint kernel, not the matmul kernel that a checked
call on inputs of the same shape launched, so the learner's matmul is not what produces their output."""
from submissions.wrong import CH05, CH05_LAUNCH, FINGERPRINT_CACHE, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", FINGERPRINT_CACHE + '''

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
