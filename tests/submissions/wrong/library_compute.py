"""5a's launcher computes the product with `torch.mm` into a temporary and then copies it into `out`
with a Triton copy kernel of its own. The values are right and a learner's kernel does write every
element of `out`, so replacing that kernel with a no-op does change the output: a "was the kernel
used?" test alone passes it. It must be rejected because a library call (aten::mm, cuBLAS on a GPU)
computed the answer."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + TRITON_COPY_KERNEL + '''


def matmul(a, b, out):
    product = torch.mm(a, b)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](product, out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "library-compute", "device": "cpu"}
