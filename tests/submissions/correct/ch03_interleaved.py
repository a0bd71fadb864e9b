"""3 with interleaved ownership: blocks of 16 x 16 threads (a 2-D block), a 128 x 128 block tile, BK =
8, and thread (tx, ty) owns the 64 outputs at rows ty + 16 i and columns tx + 16 j (i, j = 0..7),
spread over the tile rather than a contiguous 8 x 8 patch.

Independent of the solution: a 2-D thread block, strided (interleaved) ownership of C, per-thread
base pointers for the tile loads, and A's tile stored transposed in rows of 132 words, so that the
transposing store is conflict-free (word k * 132 + m sits in bank (4 k + m) mod 32, and a warp
covers 8 k by 4 m). Reading, a half-warp takes 16 consecutive words of a row of Bt and one broadcast
word of At: no conflicts; storing, a half-warp writes 16 consecutive floats of a row of C.

Why it should pass: zero-filled loads outside A and B and guarded stores make every shape exact in
fp32. Speed: 16 shared loads feed 64 FMAs per k, the intensity of the 8 x 8 solution that measured
0.66x torch on an H200 (assets/results/README.md); 8 KiB of tiles and at most 128 registers a thread
leave two blocks per SM. Measured: 0.612x (tests/submissions/correct/_measure.py, in-process, 2 timed
runs, NVIDIA H200, 2026-11-21), twice the bar of 0.30x.
"""
CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
SGEMM_SRC = r"""
#define TILE 128
#define DEPTH 8
#define SIDE 16                  // threads per side of the 2-D block
#define PER 8                    // outputs per thread along each side: TILE / SIDE
#define AT_LD (TILE + 4)         // padded row of the transposed A tile

extern "C" __global__ void __launch_bounds__(SIDE * SIDE)
sgemm_blocked(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int M, int N, int K)
{
    __shared__ float At[DEPTH][AT_LD];      // At[k][m] = A[m0 + m, k0 + k]
    __shared__ float Bt[DEPTH][TILE];       // Bt[k][n] = B[k0 + k, n0 + n]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int lin = ty * SIDE + tx;
    const int m0 = blockIdx.y * TILE;
    const int n0 = blockIdx.x * TILE;

    // Loading: A's tile is 128 rows x 8 columns, B's 8 rows x 128 columns, 1024 floats each, so 4
    // of each per thread. Thread `lin` reads column lin % 8 of A rows lin / 8 + 32 s, and column
    // lin % 128 of B rows lin / 128 + 2 s (s = 0..3): the column is the same for all four.
    const int a_row = lin / DEPTH, a_col = lin % DEPTH;
    const int b_row = lin / TILE, b_col = lin % TILE;
    const float* a_ptr = A + (size_t)(m0 + a_row) * K + a_col;
    const float* b_ptr = B + (size_t)b_row * N + n0 + b_col;
    const bool b_col_in = n0 + b_col < N;

    float acc[PER][PER];
    #pragma unroll
    for (int i = 0; i < PER; ++i)
        #pragma unroll
        for (int j = 0; j < PER; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += DEPTH) {
        const bool a_col_in = k0 + a_col < K;
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int m = a_row + 32 * s;
            // Stored transposed; with rows of 132 words, the 32 lanes of a warp (8 columns x 4 rows)
            // land in 32 different banks.
            At[a_col][m] = (a_col_in && m0 + m < M) ? a_ptr[(size_t)32 * s * K + k0] : 0.0f;
        }
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int k = b_row + 2 * s;
            Bt[k][b_col] = (b_col_in && k0 + k < K) ? b_ptr[(size_t)(k0 + 2 * s) * N] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < DEPTH; ++k) {
            float av[PER], bv[PER];
            #pragma unroll
            for (int i = 0; i < PER; ++i) av[i] = At[k][ty + SIDE * i];
            #pragma unroll
            for (int j = 0; j < PER; ++j) bv[j] = Bt[k][tx + SIDE * j];
            #pragma unroll
            for (int i = 0; i < PER; ++i)
                #pragma unroll
                for (int j = 0; j < PER; ++j)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int gm = m0 + ty + SIDE * i;
        #pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int gn = n0 + tx + SIDE * j;
            if (gm < M && gn < N) C[(size_t)gm * N + gn] = acc[i][j];
        }
    }
}
"""
sgemm_kernel = load_kernel(SGEMM_SRC, "sgemm_blocked", where="SGEMM_SRC")


def sgemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 127) // 128, (M + 127) // 128)
    sgemm_kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
EXPECT = {"cells": ["sgemm-visible", "sgemm-hidden", "sgemm-speed"], "device": "gpu"}
