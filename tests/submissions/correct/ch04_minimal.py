"""4, the textbook-minimal smem-staged WMMA GEMM: a 128 x 128 block tile, slices of 32 along K, 8 warps
arranged 4 x 2 (each warp a 32 x 64 piece: 2 x 4 accumulator fragments), every global load of a
slice issued into registers before any is stored to shared memory, rows padded by 8 halves, and
every fragment written out through a per-warp 16 x 16 staging tile with bounds checks (no fast path
for the store).

Independent of the solution: the warps are 4 x 2, not 2 x 4; the chunks are numbered per thread with
one helper for both matrices; alignment (16-byte rows and 16-byte base pointers) is checked in the
kernel; and the epilogue always stages.

Why it should pass: WMMA with fp32 accumulators (tensor cores: HMMA in the SASS); zero-filled chunks
past the edges of A and B add nothing, and staged stores skip what is outside C, so every shape is
right. Speed: the ingredients the notebook names (smem staging of a 128 x 128 x 32 slice, all loads
in flight, padding) are those of the calibration rung "4 smem-staged 128x128x32, 8 warps, all loads
in flight (solution)": 0.272-0.284x torch.mm fp16 on an H200, against the bar of 0.20x, a 36-42%
margin (assets/results/README.md); the rung that stores each chunk before loading the next
(serial_loads, 0.14x) is what this design avoids. A 4 x 2 warp grid loads 2 A and 4 B fragments per
8 MMAs, the same count as 2 x 4. Measured: 0.268x (tests/submissions/correct/_measure.py, in-process,
2 timed runs, NVIDIA H200, 2026-11-21), 34% above the bar.
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
#define NWARPS 8
#define THREADS (32 * NWARPS)
#define LDA (BK + 8)        // padded row lengths, in halves (multiples of 8)
#define LDB (BN + 8)
#define A_CHUNKS (BM * BK / 8 / THREADS)   // 16-byte chunks per thread per slice: 2
#define B_CHUNKS (BK * BN / 8 / THREADS)   // 2

// 8 halves of row `r` of a rows x cols row-major matrix, starting at column `c`, zeros outside.
__device__ __forceinline__ uint4 chunk(const half* m, int rows, int cols, int r, int c, bool vec)
{
    if (r >= rows || c >= cols) return make_uint4(0u, 0u, 0u, 0u);
    const half* p = m + (size_t)r * cols + c;
    if (vec) return *reinterpret_cast<const uint4*>(p);
    unsigned short h[8];
    #pragma unroll
    for (int e = 0; e < 8; ++e) h[e] = (c + e < cols) ? __half_as_ushort(p[e]) : (unsigned short)0;
    uint4 u;
    u.x = h[0] | ((unsigned)h[1] << 16);
    u.y = h[2] | ((unsigned)h[3] << 16);
    u.z = h[4] | ((unsigned)h[5] << 16);
    u.w = h[6] | ((unsigned)h[7] << 16);
    return u;
}

extern "C" __global__ void __launch_bounds__(THREADS)
wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K)
{
    __shared__ __align__(32) half sa[BM * LDA];
    __shared__ __align__(32) half sb[BK * LDB];
    __shared__ __align__(32) float stage[NWARPS][256];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wr = warp >> 1, wc = warp & 1;         // 4 x 2 warps: rows 32 wr .., columns 64 wc ..
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vec = (K % 8 == 0) && (N % 8 == 0)
                     && ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) % 16 == 0);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
    #pragma unroll
    for (int i = 0; i < 2; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        uint4 ra[A_CHUNKS], rb[B_CHUNKS];
        #pragma unroll
        for (int s = 0; s < A_CHUNKS; ++s) {         // A slice: 128 rows x 4 chunks
            const int q = tid + s * THREADS;
            ra[s] = chunk(a, M, K, row0 + q / (BK / 8), k0 + 8 * (q % (BK / 8)), vec);
        }
        #pragma unroll
        for (int s = 0; s < B_CHUNKS; ++s) {         // B slice: 32 rows x 16 chunks
            const int q = tid + s * THREADS;
            rb[s] = chunk(b, K, N, k0 + q / (BN / 8), col0 + 8 * (q % (BN / 8)), vec);
        }
        #pragma unroll
        for (int s = 0; s < A_CHUNKS; ++s) {
            const int q = tid + s * THREADS;
            *reinterpret_cast<uint4*>(sa + (q / (BK / 8)) * LDA + 8 * (q % (BK / 8))) = ra[s];
        }
        #pragma unroll
        for (int s = 0; s < B_CHUNKS; ++s) {
            const int q = tid + s * THREADS;
            *reinterpret_cast<uint4*>(sb + (q / (BN / 8)) * LDB + 8 * (q % (BN / 8))) = rb[s];
        }
        __syncthreads();

        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[4];
            #pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], sa + (32 * wr + 16 * i) * LDA + kk, LDA);
            #pragma unroll
            for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(fb[j], sb + kk * LDB + 64 * wc + 16 * j, LDB);
            #pragma unroll
            for (int i = 0; i < 2; ++i)
                #pragma unroll
                for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }

    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int r0 = row0 + 32 * wr + 16 * i, c0 = col0 + 64 * wc + 16 * j;
            wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const int r = r0 + e / 16, cc = c0 + e % 16;
                if (r < M && cc < N) c[(size_t)r * N + cc] = stage[warp][e];
            }
            __syncwarp();
        }
    }
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm", where="WMMA_GEMM_SRC")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    wmma_gemm_kernel(((N + 127) // 128, (M + 127) // 128), (256,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
EXPECT = {"cells": ["wmma-tensor-cores", "wmma-visible", "wmma-hidden", "wmma-speed"], "device": "gpu"}
