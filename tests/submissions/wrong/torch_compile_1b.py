"""1b's launcher hands the whole expression to `torch.compile` and copies the answer into `out` with a
CUDA copy kernel of its own. To stay clear of the torch check it first copies the inputs into
buffers of its own with that same kernel, so torch never computes on the grader's tensors. The
kernels that computed relu(a*x + b) are Inductor's Triton kernels (or torch's own, should compiling
fall back to eager): the device trace sees them ran inside the launcher, and names one."""
from submissions.wrong import CUDA_COPY_KERNEL

CHAPTER_DIR = "01_vector_add"
CELLS = {
    "fused-solution": CUDA_COPY_KERNEL + r'''
_compiled = torch.compile(lambda a, x, b: torch.relu(a * x + b))


def _copy(src, dst):
    n = dst.numel()
    copy_kernel(((n + 255) // 256,), (256,), (src, dst, np.int64(n)))


def fused_axpb_relu(a, x, b, out):
    mine = [torch.empty_like(t) for t in (a, x, b)]
    for src, dst in zip((a, x, b), mine):
        _copy(src, dst)
    _copy(_compiled(*mine), out)
''',
}
EXPECT = {"cell": "fused-visible", "reason": "library-compute", "device": "gpu", "message": "ran inside"}
