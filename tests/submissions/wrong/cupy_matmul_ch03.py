"""Exercise 3's launcher multiplies with CuPy (`cupy.from_dlpack(a) @ cupy.from_dlpack(b)`: cuBLAS
behind it) into an array of its own, then copies the product into `out` with a CUDA copy kernel it
wrote. No torch operation touches the grader's tensors, and the learner's kernel writes every element
of `out`, so neither the torch check nor the no-op probe sees anything. The device trace does: a
cuBLAS GEMM kernel ran inside `sgemm`, and it must be named in the rejection."""
from submissions.wrong import CUDA_COPY_KERNEL

CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
import cupy

''' + CUDA_COPY_KERNEL + r'''


def sgemm(a, b, out):
    product = cupy.from_dlpack(a) @ cupy.from_dlpack(b)
    n = out.numel()
    copy_kernel(((n + 255) // 256,), (256,), (product, out, np.int64(n)))
''',
}
EXPECT = {"cell": "sgemm-visible", "reason": "library-compute", "device": "gpu", "message": "cuBLAS kernel"}
