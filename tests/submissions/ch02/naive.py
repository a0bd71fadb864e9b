"""Exercise 2 written as the naive kernel (one thread per element, coalesced reads, strided writes):
correct on every shape, so it passes both correctness cells, but it must fail the speed cell
(2.0x torch's transposed copy) with "below the bar". Everything else is the solution."""
CHAPTER_DIR = "02_coalescing"
CELLS = {
    "transpose-solution": r'''
TILE = 32
BLOCK_ROWS = 8

TRANSPOSE_SRC = r"""
extern "C" __global__
void transpose_tiled(const float* x, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[c * rows + r] = x[r * cols + c];
    }
}
"""
transpose_kernel = load_kernel(TRANSPOSE_SRC, "transpose_tiled")


def launch_tiled(kernel, x, out, block_rows=8):
    rows, cols = x.shape
    grid = ((cols + 31) // 32, (rows + block_rows - 1) // block_rows)
    kernel(grid, (32, block_rows), (x, out, np.int32(rows), np.int32(cols)))


def transpose(x, out):
    launch_tiled(transpose_kernel, x, out)
''',
}
