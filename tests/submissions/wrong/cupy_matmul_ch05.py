"""5a's launcher multiplies with CuPy (fp16 `@`: cuBLAS behind it) and copies the product into `out`
with a Triton copy kernel of its own. Nothing torch runs touches the grader's tensors and the
learner's kernel writes all of `out`; the device trace shows the cuBLAS kernel, which must be named."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + '''
import cupy
''' + TRITON_COPY_KERNEL + '''


def matmul(a, b, out):
    product = torch.from_dlpack(cupy.from_dlpack(a) @ cupy.from_dlpack(b))
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](product, out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "library-compute", "device": "gpu", "message": "cuBLAS kernel"}
