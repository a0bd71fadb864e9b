"""5a's launcher, written without the autotuner, shrinks its row tile for small matrices in a
`while` loop with a typo: `block_m // 2` instead of `block_m //= 2`, so for M < 128 the loop never
ends (in pure Python: no kernel is running, and nothing but a hard time limit stops it). Shapes with
M >= 128 skip the loop and are right, so on a GPU the visible cell passes; the hidden cell's first
shape (M = 1) hangs on any device. It must be rejected as timed out, and the worker killed."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": edited(
        _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")],
        ('@triton.autotune(configs=TUNED_CONFIGS, key=["M", "N", "K"])\n', "")) + '''
def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    block_m = 128
    while block_m > max(M, 16):  # no taller than the matrix (16 rows at least, for tl.dot)
        block_m // 2
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, 128),)
    matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_N=128, BLOCK_K=32, GROUP_M=8)
''',
}
EXPECT = {"cell": "matmul-hidden", "reason": "timed-out", "device": "cpu"}
