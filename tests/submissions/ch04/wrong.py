"""A student with mistakes: 4.0 counts a multiply-add as one FLOP (m*n*k), and the launcher rounds the
grid down (N // 128 blocks), so partial tiles of C are never written. 4.1 and the tensor-core check
are right, and the diagnosis and exercise 4c are the solution's (5 points on any machine with sm_80+). On a GPU the visible cell
fails with NaN at the edges, and so do the hidden shapes when nbgrader grades; the speed cell, at
4096^3 where there are no partial tiles, passes. (`ladder check` on the student's notebook runs only the hidden cell's visible shapes.)"""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "napkin-solution": '''
def gemm_flops(m, n, k):
    return m * n * k


def floor_ms(flops, tflops):
    return flops / (tflops * 1e12) * 1e3
''',
    "wmma-solution": None,  # filled below: the solution's kernel with a launcher that rounds down
}

from submissions.build import _solution_sources  # noqa: E402

_solution = _solution_sources(CHAPTER_DIR)["wmma-solution"]
_launcher = _solution[_solution.index("def wmma_gemm("):]
CELLS["wmma-solution"] = _solution.replace(
    _launcher,
    '''def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = (max(1, N // 128), max(1, M // 128))
    wmma_gemm_kernel(grid, (256,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''')
