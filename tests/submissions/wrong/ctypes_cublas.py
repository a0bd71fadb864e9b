"""Exercise 3's launcher calls cuBLAS's `cublasSgemm_v2` itself, through ctypes, on the grader's
tensors' device pointers, into a temporary, and copies that into `out` with its own CUDA kernel. No
Python library the grader knows is involved; the device trace still sees the cuBLAS kernel run
inside `sgemm`, and the rejection must name it."""
from submissions.wrong import CUDA_COPY_KERNEL

CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
import ctypes
import ctypes.util
import glob
import os


def _libcublas():
    nvidia = os.path.join(os.path.dirname(torch.__file__), "..", "nvidia")
    found = sorted(glob.glob(os.path.join(nvidia, "**", "libcublas.so*"), recursive=True))
    return found[0] if found else ctypes.util.find_library("cublas")


_cublas = ctypes.CDLL(_libcublas())
_handle = ctypes.c_void_p()

''' + CUDA_COPY_KERNEL + r'''


def sgemm(a, b, out):
    if not _handle.value:
        _cublas.cublasCreate_v2(ctypes.byref(_handle))
    m, k = a.shape
    n = b.shape[1]
    product = torch.empty_like(out)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    # Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
    status = _cublas.cublasSgemm_v2(_handle, 0, 0, n, m, k, ctypes.byref(one), ctypes.c_void_p(b.data_ptr()), n,
                                    ctypes.c_void_p(a.data_ptr()), k, ctypes.byref(zero),
                                    ctypes.c_void_p(product.data_ptr()), n)
    assert status == 0, f"cublasSgemm_v2 returned {status}"
    copy_kernel(((m * n + 255) // 256,), (256,), (product, out, np.int64(m * n)))
''',
}
EXPECT = {"cell": "sgemm-visible", "reason": "library-compute", "device": "gpu", "message": "cuBLAS kernel"}
