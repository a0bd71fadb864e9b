"""5a's launcher multiplies with a Triton kernel from a library (PyTorch's block-sparse
`torch.sparse._triton_ops.bsr_dense_mm`, on a dense matrix stored as 32x32 blocks), after copying the
inputs into padded buffers of its own with its own Triton kernel, and copies the product back the same
way. A Triton kernel it did not write computed the answer: the launch hook sees that kernel's code
lies in an installed package, and the rejection names it."""
from submissions.wrong import CH05, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + '''
from torch.sparse._triton_ops import bsr_dense_mm


@triton.jit
def copy2d_kernel(src, dst, rows, cols, s_src, s_dst, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    for start in range(0, cols, BLOCK):
        mask = start + c < cols
        tl.store(dst + r * s_dst + start + c, tl.load(src + r * s_src + start + c, mask=mask), mask=mask)


def _copy(src, dst, rows, cols):
    copy2d_kernel[(rows,)](src, dst, rows, cols, src.stride(0), dst.stride(0), BLOCK=256)


def _padded(t):
    rows, cols = t.shape
    p = torch.zeros((rows + 31) // 32 * 32, (cols + 31) // 32 * 32, dtype=t.dtype, device=t.device)
    _copy(t, p, rows, cols)
    return p


def matmul(a, b, out):
    M, N = out.shape
    product = bsr_dense_mm(_padded(a).to_sparse_bsr((32, 32)), _padded(b))
    _copy(product, out, M, N)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "library-compute", "device": "gpu", "message": "installed package"}
