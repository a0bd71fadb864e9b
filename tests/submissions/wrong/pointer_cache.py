"""5a's launcher keeps every product it computed, keyed by the data pointers and shapes of its inputs
(no values at all: the cheapest cache there is). On a hit it copies the kept product into `out` with
its own Triton kernel and launches no matmul. Timed calls rotate over two input sets whose memory stays
put, so from the third call on every call hits, and a timer sees a 32 MB copy instead of a 4096^3
product. It must be rejected in the speed cell: the timed calls that hit launch only the copy kernel,
not the matmul kernel that a checked call on inputs of the same shape launched."""
from submissions.wrong import CH05, CH05_LAUNCH, TRITON_COPY_KERNEL, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", TRITON_COPY_KERNEL + '''

_kept = {}


def matmul(a, b, out):'''),
        ("    M, K = a.shape\n    N = b.shape[1]\n", '''\
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    if key in _kept:
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](_kept[key], out, out.numel(), BLOCK=1024)
        return
    M, K = a.shape
    N = b.shape[1]
'''),
        (CH05_LAUNCH, CH05_LAUNCH + '''\
    kept = torch.empty_like(out)
    copy_kernel[(triton.cdiv(out.numel(), 1024),)](out, kept, out.numel(), BLOCK=1024)
    _kept[key] = kept
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
