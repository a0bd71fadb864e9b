"""2 with an XOR-swizzled tile instead of padding: a [32][32] shared tile where element (r, c) of the
tile is kept in column c ^ r, blocks of 32 x 8 threads, 4 rows per thread.

Independent of the solution: the bank conflicts of the column read are removed by permuting the
columns of each row (r XOR c), not by a padding column, so the tile is 4 KiB exactly. A warp writes
row r at columns c ^ r for c = 0..31 (a permutation of the 32 banks) and reads column c at rows r =
0..31, which sit in banks c ^ r (again all 32 banks): neither side conflicts. PAD is ignored (the
notebook's PAD=0 cell then measures the same kernel, as its text allows); BLOCK_ROWS is honoured.

Why it should pass: the same tile coverage and bounds checks as any tiled transpose; the swizzle is
a bijection within each row. Speed: conflict-free shared memory, coalesced global accesses and 4
loads in flight per thread are the three ingredients of the calibrated solution (3.11-3.13x torch on
an H200, assets/results/README.md); the swizzle costs one XOR per access. Measured: 2.97x
(tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200, 2026-11-21), 48% above
the bar of 2.0x.
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

extern "C" __global__
void transpose_tiled(const float* x, float* out, int rows, int cols)
{
    __shared__ float tile[TILE * TILE];   // element (r, c) of the tile lives at r * TILE + (c ^ r)
    const int tx = threadIdx.x;
    const int in_col = blockIdx.x * TILE + tx;
    #pragma unroll
    for (int k = 0; k < TILE / BLOCK_ROWS; ++k) {
        const int r = threadIdx.y + k * BLOCK_ROWS;
        const int in_row = blockIdx.y * TILE + r;
        if (in_row < rows && in_col < cols)
            tile[r * TILE + (tx ^ r)] = x[(size_t)in_row * cols + in_col];
    }
    __syncthreads();
    const int out_col = blockIdx.y * TILE + tx;      // a row of x
    #pragma unroll
    for (int k = 0; k < TILE / BLOCK_ROWS; ++k) {
        const int c = threadIdx.y + k * BLOCK_ROWS;   // a column of the tile
        const int out_row = blockIdx.x * TILE + c;    // a column of x
        if (out_row < cols && out_col < rows)
            out[(size_t)out_row * rows + out_col] = tile[tx * TILE + (c ^ tx)];
    }
}
"""
transpose_kernel = load_kernel(TRANSPOSE_SRC, "transpose_tiled", where="TRANSPOSE_SRC")


def launch_tiled(kernel, x, out, block_rows=BLOCK_ROWS):
    rows, cols = x.shape
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    kernel(grid, (TILE, block_rows), (x, out, np.int32(rows), np.int32(cols)))


def transpose(x, out):
    launch_tiled(transpose_kernel, x, out)
''',
}
EXPECT = {"cells": ["transpose-visible", "transpose-hidden", "transpose-speed"], "device": "gpu"}
