"""5a's launcher does the product on one call in four of a timed batch (it finds `run_batch` on the
stack; every other call does the work); on the other three it launches a tiny kernel of its own that
writes nothing and returns, leaving `out` as it was. Within a batch that rotates over two
input sets every output was written by an earlier call of the batch, so a grader that checks one
output after the batch sees right values, and a timer sees a quarter of the work. It must be rejected
in the speed cell: three calls in four launch only the tiny kernel, not the matmul kernel that a
checked call on inputs of the same shape launched."""
from submissions.wrong import CH05, CH05_LAUNCH, FIND_TIMED_BATCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", FIND_TIMED_BATCH + '''


@triton.jit
def idle_kernel(x_ptr):
    pass


_calls = [0]


def matmul(a, b, out):'''),
        ("    M, K = a.shape\n    N = b.shape[1]\n", '''\
    _calls[0] += 1
    if _timed_batch() is not None and _calls[0] % 4 != 1:
        idle_kernel[(1,)](out)   # something launched, nothing computed
        return
    M, K = a.shape
    N = b.shape[1]
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "kernel-unused", "device": "gpu"}
