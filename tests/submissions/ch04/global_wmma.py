"""The first rung: one warp per 16x16 tile of C, fragments loaded straight from global memory (the
notebook's worked version, extended to any shape through a zero-filled staging tile per warp at the
edges). Correct, on tensor cores, and far too slow: it must pass the tensor-core, visible and hidden
cells and fail the speed cell (bar 0.20x torch.mm; calibrated at 0.04x), every time."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
using namespace nvcuda;

// One warp per 16x16 tile of C, fragments loaded straight from global memory. Tiles that cross
// an edge of a matrix (or rows that are not 16-byte multiples) go through a small zero-filled
// staging tile of this warp's own, so any M, N, K works.
#define WARPS 4

extern "C" __global__
void wmma_gemm_global(const half* a, const half* b, float* c, int M, int N, int K)
{
    __shared__ __align__(32) half stage_a[WARPS][16 * 16];
    __shared__ __align__(32) half stage_b[WARPS][16 * 16];
    __shared__ __align__(32) float stage_c[WARPS][16 * 16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = blockIdx.y * 16;
    const int col0 = (blockIdx.x * WARPS + warp) * 16;
    if (col0 >= N) return;
    const half zero = __float2half(0.0f);

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    const bool a_direct = row0 + 16 <= M && K % 8 == 0;
    const bool b_direct = col0 + 16 <= N && N % 8 == 0;
    for (int k = 0; k < K; k += 16) {
        const bool k_in = k + 16 <= K;
        if (a_direct && k_in) {
            wmma::load_matrix_sync(a_frag, a + (size_t)row0 * K + k, K);
        } else {
            for (int e = lane; e < 256; e += 32) {
                const int r = e / 16, cc = e % 16;
                stage_a[warp][e] = (row0 + r < M && k + cc < K) ? a[(size_t)(row0 + r) * K + k + cc] : zero;
            }
            __syncwarp();
            wmma::load_matrix_sync(a_frag, stage_a[warp], 16);
        }
        if (b_direct && k_in) {
            wmma::load_matrix_sync(b_frag, b + (size_t)k * N + col0, N);
        } else {
            for (int e = lane; e < 256; e += 32) {
                const int r = e / 16, cc = e % 16;
                stage_b[warp][e] = (k + r < K && col0 + cc < N) ? b[(size_t)(k + r) * N + col0 + cc] : zero;
            }
            __syncwarp();
            wmma::load_matrix_sync(b_frag, stage_b[warp], 16);
        }
        wmma::mma_sync(acc, a_frag, b_frag, acc);
        __syncwarp();
    }
    if (row0 + 16 <= M && col0 + 16 <= N && N % 4 == 0) {
        wmma::store_matrix_sync(c + (size_t)row0 * N + col0, acc, N, wmma::mem_row_major);
    } else {
        wmma::store_matrix_sync(stage_c[warp], acc, 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
            const int r = row0 + e / 16, cc = col0 + e % 16;
            if (r < M && cc < N) c[(size_t)r * N + cc] = stage_c[warp][e];
        }
    }
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm_global")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    warps = 4
    grid = ((N + 16 * warps - 1) // (16 * warps), (M + 15) // 16)
    wmma_gemm_kernel(grid, (32 * warps,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
