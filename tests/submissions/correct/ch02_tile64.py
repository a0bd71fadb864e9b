"""2 with a 64 x 64 tile: a padded [64][65] shared tile per block of 32 x 8 threads, each thread moving
16 elements (2 columns, tx and tx + 32, by 8 rows), all 16 loads issued before the barrier.

Independent of the solution: a tile four times larger, a grid of ceil(cols/64) x ceil(rows/64)
blocks, and two column halves per thread (each warp access is still 32 consecutive floats, 128
bytes). Reading a tile column, lanes tx = 0..31 touch words tx * 65 + const, banks (tx + const) mod
32: conflict-free. PAD and BLOCK_ROWS are honoured (the notebook's variant cells still run).

Why it should pass: the two column halves and the row loop cover the 64 x 64 tile, with bounds
checks on both sides, so every shape is exact. Speed: coalesced, conflict-free and with 16 loads in
flight per thread (the calibrated 32 x 32 solution has 4 and reached 3.11-3.13x torch on an H200,
assets/results/README.md); the 16.6 KiB tile lets 8 blocks share an H100/H200 SM. Measured: 3.23x
(tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200, 2026-11-21), 61% above
the bar of 2.0x.
"""
CHAPTER_DIR = "02_coalescing"
CELLS = {
    "transpose-solution": r'''
TILE = 64
BLOCK_ROWS = 8

TRANSPOSE_SRC = r"""
#define TILE 64
#define HALF 32       // threads along x; each thread covers columns tx and tx + HALF
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

extern "C" __global__ void __launch_bounds__(HALF * BLOCK_ROWS)
transpose_tiled(const float* __restrict__ x, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + PAD];
    const long long r_base = (long long)blockIdx.y * TILE;
    const long long c_base = (long long)blockIdx.x * TILE;

    #pragma unroll
    for (int h = 0; h < TILE; h += HALF) {
        const long long c = c_base + h + threadIdx.x;
        #pragma unroll
        for (int k = 0; k < TILE / BLOCK_ROWS; ++k) {
            const int j = threadIdx.y + k * BLOCK_ROWS;
            if (r_base + j < rows && c < cols)
                tile[j][h + threadIdx.x] = x[(r_base + j) * cols + c];
        }
    }
    __syncthreads();
    #pragma unroll
    for (int h = 0; h < TILE; h += HALF) {
        const long long oc = r_base + h + threadIdx.x;     // column of out = row of x
        #pragma unroll
        for (int k = 0; k < TILE / BLOCK_ROWS; ++k) {
            const int j = threadIdx.y + k * BLOCK_ROWS;
            if (c_base + j < cols && oc < rows)
                out[(c_base + j) * rows + oc] = tile[h + threadIdx.x][j];
        }
    }
}
"""
transpose_kernel = load_kernel(TRANSPOSE_SRC, "transpose_tiled", where="TRANSPOSE_SRC")


def launch_tiled(kernel, x, out, block_rows=BLOCK_ROWS):
    rows, cols = x.shape
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    kernel(grid, (32, block_rows), (x, out, np.int32(rows), np.int32(cols)))


def transpose(x, out):
    launch_tiled(transpose_kernel, x, out)
''',
}
EXPECT = {"cells": ["transpose-visible", "transpose-hidden", "transpose-speed"], "device": "gpu"}
