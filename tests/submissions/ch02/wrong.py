"""A student with mistakes: 2.1 counts only the reads (4 bytes per element), 2.2 thinks only rows
of a multiple of 32 words conflict (right for 32, 33 and 64, wrong for 34 or 48), and the tiled
kernel stages the tile but forgets to transpose inside it (it writes out from tile[ty + j][tx], not
tile[tx][ty + j]), so whole tiles land in the right place with their contents untransposed. Every access stays in
bounds. 2.0 is right and earns its point, and so does the diagnosis (the solution's); every other
graded cell fails."""
CHAPTER_DIR = "02_coalescing"
CELLS = {
    "napkin-solution": '''
def transpose_bytes(rows, cols):
    return 4 * rows * cols


def transpose_floor_ms(rows, cols, gbps):
    return transpose_bytes(rows, cols) / (gbps * 1e9) * 1e3
''',
    "banks-solution": '''
def bank_conflict_ways(row_words):
    return 32 if row_words % 32 == 0 else 1
''',
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
    __shared__ float tile[TILE][TILE + PAD];

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
            out[(out_r0 + j) * rows + out_c] = tile[threadIdx.y + j][threadIdx.x];
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
