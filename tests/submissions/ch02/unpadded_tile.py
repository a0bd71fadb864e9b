"""Exercise 2 as the solution's kernel *without* padding (`tile[TILE][TILE]`): a 32x32 tile, blocks
of 32x8 threads with 4 rows each, both global sides coalesced, but every column read of the tile is
a 32-way bank conflict. Correct on every shape; it must fail the speed cell (2.0x torch) with
"below the bar" on an H100/H200 in 10 runs of 10. Everything else is the solution."""
CHAPTER_DIR = "02_coalescing"
CELLS = {
    "transpose-solution": r'''
TILE = 32
BLOCK_ROWS = 8

TRANSPOSE_SRC = r"""
#define TILE 32
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

extern "C" __global__
void transpose_tiled(const float* x, float* out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];

    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (r0 + j < rows && c < cols) {
            tile[threadIdx.y + j][threadIdx.x] = x[(r0 + j) * cols + c];
        }
    }
    __syncthreads();

    int out_c = blockIdx.y * TILE + threadIdx.x;
    int out_r0 = blockIdx.x * TILE + threadIdx.y;
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (out_r0 + j < cols && out_c < rows) {
            out[(out_r0 + j) * rows + out_c] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}
"""
transpose_kernel = load_kernel(TRANSPOSE_SRC, "transpose_tiled")


def launch_tiled(kernel, x, out, block_rows=BLOCK_ROWS):
    rows, cols = x.shape
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    kernel(grid, (TILE, block_rows), (x, out, np.int32(rows), np.int32(cols)))


def transpose(x, out):
    launch_tiled(transpose_kernel, x, out)
''',
}
