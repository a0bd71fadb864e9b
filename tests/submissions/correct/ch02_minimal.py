"""2, the textbook-minimal tiled transpose: a 32 x 32 tile padded to [32][33], blocks of 32 x 8
threads, each thread moving 4 elements (rows ty, ty+8, ty+16, ty+24 of the tile) in and out.

Written independently: the loops count steps (a fixed trip count, TILE / BLOCK_ROWS, so they unroll
and a thread's 4 loads are in flight together), the tile's origin is computed once per block, and
global indices are 64-bit. It honours the notebook's macros (PAD, BLOCK_ROWS) and keeps
`launch_tiled`, so the notebook's PAD=0 / BLOCK_ROWS=32 measurement cells still run.

Why it should pass: every element of a tile inside the matrix is loaded and stored under the bounds
checks, so any shape from 1 x 1 up is exact. Speed: this is the design of the calibration rung "2
padded [32][33] tile, 32x8 threads, 4 rows each" in assets/results/README.md: 3.11-3.13x torch on an
H200 (10/10), against the bar of 2.0x: a 55% margin. Measured: 3.04x
(tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200, 2026-11-21).
"""
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
    __shared__ float tile[TILE][TILE + PAD];
    const int row0 = blockIdx.y * TILE;    // this block's tile of x starts at (row0, col0)
    const int col0 = blockIdx.x * TILE;

    // A fixed trip count (TILE / BLOCK_ROWS) lets the compiler unroll the loop and issue all of a
    // thread's loads before the first is needed.
    const int c = col0 + threadIdx.x;
    #pragma unroll
    for (int step = 0; step < TILE / BLOCK_ROWS; ++step) {
        const int r = threadIdx.y + step * BLOCK_ROWS;
        if (row0 + r < rows && c < cols)
            tile[r][threadIdx.x] = x[(long long)(row0 + r) * cols + c];
    }
    __syncthreads();

    // out is cols x rows: its row (col0 + r) holds column (col0 + r) of x.
    const int oc = row0 + threadIdx.x;
    #pragma unroll
    for (int step = 0; step < TILE / BLOCK_ROWS; ++step) {
        const int r = threadIdx.y + step * BLOCK_ROWS;
        if (col0 + r < cols && oc < rows)
            out[(long long)(col0 + r) * rows + oc] = tile[threadIdx.x][r];
    }
}
"""
transpose_kernel = load_kernel(TRANSPOSE_SRC, "transpose_tiled", where="TRANSPOSE_SRC")


def launch_tiled(kernel, x, out, block_rows=BLOCK_ROWS):
    rows, cols = x.shape
    kernel((-(-cols // TILE), -(-rows // TILE)), (TILE, block_rows), (x, out, np.int32(rows), np.int32(cols)))


def transpose(x, out):
    launch_tiled(transpose_kernel, x, out)
''',
}
EXPECT = {"cells": ["transpose-visible", "transpose-hidden", "transpose-speed"], "device": "gpu"}
