"""4 with two shared-memory buffers and register prefetch: a 128 x 128 x 32 block tile, 8 warps in a 2
x 4 grid (each a 64 x 32 piece: 4 x 2 fragments). While the warps multiply the slice in one buffer,
every thread already has the next slice's global loads in flight into registers; it stores them into
the other buffer afterwards, so each step needs a single `__syncthreads()`.

Independent of the solution: a software pipeline across slices (global loads overlap the MMAs), two
buffers carved from one shared array, the output staging tile reusing that array after the loop,
`__launch_bounds__(256, 2)`, and edge chunks built element by element only when a row is not 16-byte
aligned.

Why it should pass: fp32 WMMA accumulators (HMMA), zero-filled chunks outside A and B, guarded
stores: every shape right. Speed: the solution's tile and warp layout (0.272-0.284x torch.mm fp16 on
an H200) with the next slice's loads overlapping the MMAs; the rung that does exactly this overlap
through registers, register_prefetch, measured 0.329-0.342x there (assets/results/README.md).
Measured: 0.332x (tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200,
2026-11-21), 65% above the bar of 0.20x.
"""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define THREADS 256
#define LDA 40               // BK + 8 halves
#define LDB 136              // BN + 8 halves
#define A_TILE (BM * LDA)    // halves in one buffer of A
#define B_TILE (BK * LDB)

__device__ __forceinline__ uint4 load_chunk(const half* m, int rows, int cols, int r, int c, bool aligned)
{
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r < rows && c < cols) {
        const half* p = m + (size_t)r * cols + c;
        if (aligned) {
            v = __ldg(reinterpret_cast<const uint4*>(p));
        } else {
            unsigned w[4] = {0u, 0u, 0u, 0u};
            #pragma unroll
            for (int e = 0; e < 8; ++e)
                if (c + e < cols) w[e / 2] |= (unsigned)__half_as_ushort(p[e]) << (16 * (e % 2));
            v = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
wmma_gemm(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int M, int N, int K)
{
    __shared__ __align__(128) half smem[2 * (A_TILE + B_TILE)];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / 4, wn = warp % 4;          // 2 x 4 warps: rows 64 wm .., columns 32 wn ..
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool aligned = (K % 8 == 0) && (N % 8 == 0)
                         && (((reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b)) & 15) == 0);

    // Thread tid copies chunks tid and tid + 256 of each slice: of A, row q / 4, chunk q % 4;
    // of B, row q / 16, chunk q % 16.
    uint4 pa[2], pb[2];
    auto fetch = [&](int k0) {
        #pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int q = tid + s * THREADS;
            pa[s] = load_chunk(a, M, K, bm + q / 4, k0 + 8 * (q % 4), aligned);
            pb[s] = load_chunk(b, K, N, k0 + q / 16, bn + 8 * (q % 16), aligned);
        }
    };
    auto put = [&](int buf) {
        half* sa = smem + buf * A_TILE;
        half* sb = smem + 2 * A_TILE + buf * B_TILE;
        #pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int q = tid + s * THREADS;
            *reinterpret_cast<uint4*>(sa + (q / 4) * LDA + 8 * (q % 4)) = pa[s];
            *reinterpret_cast<uint4*>(sb + (q / 16) * LDB + 8 * (q % 16)) = pb[s];
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    fetch(0);
    put(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) fetch(k0 + BK);
        const half* sa = smem + buf * A_TILE;
        const half* sb = smem + 2 * A_TILE + buf * B_TILE;
        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[2];
            #pragma unroll
            for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(fa[i], sa + (64 * wm + 16 * i) * LDA + kk, LDA);
            #pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], sb + kk * LDB + 32 * wn + 16 * j, LDB);
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        if (more) put(buf ^ 1);
        __syncthreads();
        buf ^= 1;
    }

    // The loop ended with a barrier, so the buffers are free: each warp stages through 1 KiB of them.
    float* stage = reinterpret_cast<float*>(smem) + warp * 256;
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        #pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int r0 = bm + 64 * wm + 16 * i, c0 = bn + 32 * wn + 16 * j;
            if (r0 >= M || c0 >= N) continue;                 // the whole warp agrees
            if (r0 + 16 <= M && c0 + 16 <= N && (N % 8) == 0 && (reinterpret_cast<size_t>(c) & 31) == 0) {
                wmma::store_matrix_sync(c + (size_t)r0 * N + c0, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32)
                    if (r0 + e / 16 < M && c0 + e % 16 < N) c[(size_t)(r0 + e / 16) * N + c0 + e % 16] = stage[e];
                __syncwarp();
            }
        }
    }
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm", where="WMMA_GEMM_SRC")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 127) // 128, (M + 127) // 128)
    wmma_gemm_kernel(grid, (256,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
EXPECT = {"cells": ["wmma-tensor-cores", "wmma-visible", "wmma-hidden", "wmma-speed"], "device": "gpu"}
