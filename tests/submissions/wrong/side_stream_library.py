"""Exercise 3's launcher runs its own SGEMM kernel (into a scratch buffer), while the answer comes
from CuPy's matmul (cuBLAS) on a side stream of its own, which it waits for and copies into `out`
with a copy kernel it wrote. The learner's kernels launch and write `out`; only the device trace,
which records every stream, shows the cuBLAS kernel, and the rejection must name it."""
from submissions.wrong import CUDA_COPY_KERNEL, notebook_cell

CHAPTER_DIR = "03_tiling"
_SOLUTION = notebook_cell(CHAPTER_DIR, "sgemm-solution")
CELLS = {
    "sgemm-solution": _SOLUTION[:_SOLUTION.index("\ndef sgemm(a, b, out):")] + r'''
import cupy

''' + CUDA_COPY_KERNEL + r'''
_side = cupy.cuda.Stream(non_blocking=True)


def sgemm(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    scratch = torch.empty_like(out)
    sgemm_kernel(((n + 127) // 128, (m + 127) // 128), (256,), (a, b, scratch, np.int32(m), np.int32(n), np.int32(k)))
    with _side:
        product = cupy.from_dlpack(a) @ cupy.from_dlpack(b)
    _side.synchronize()
    copy_kernel(((m * n + 255) // 256,), (256,), (product, out, np.int64(m * n)))
''',
}
EXPECT = {"cell": "sgemm-visible", "reason": "library-compute", "device": "gpu", "message": "cuBLAS kernel"}
