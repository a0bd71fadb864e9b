"""WMMA with an fp16 accumulator fragment (`wmma::fragment<wmma::accumulator, 16, 16, 16, half>`), the
result widened to fp32 on the way out. On tensor cores, so the tensor-core cell passes; the sums lose
bits at every step, so the visible, hidden and speed cells must all fail on the tolerance (the
visible shapes include K = 4096)."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
using namespace nvcuda;
// wmma with an fp16 accumulator (any shape via zero-filled per-warp staging), output widened to fp32.
#define WARPS 4
extern "C" __global__
void wmma_gemm_fp16acc(const half* a, const half* b, float* c, int M, int N, int K)
{
    __shared__ __align__(32) half sa[WARPS][256];
    __shared__ __align__(32) half sb[WARPS][256];
    __shared__ __align__(32) half sc[WARPS][256];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = blockIdx.y * 16, col0 = (blockIdx.x * WARPS + warp) * 16;
    if (col0 >= N) return;
    const half zero = __float2half(0.0f);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> af;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> bf;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;
    wmma::fill_fragment(acc, zero);
    for (int k = 0; k < K; k += 16) {
        for (int e = lane; e < 256; e += 32) {
            const int r = e / 16, cc = e % 16;
            sa[warp][e] = (row0 + r < M && k + cc < K) ? a[(size_t)(row0 + r) * K + k + cc] : zero;
            sb[warp][e] = (k + r < K && col0 + cc < N) ? b[(size_t)(k + r) * N + col0 + cc] : zero;
        }
        __syncwarp();
        wmma::load_matrix_sync(af, sa[warp], 16);
        wmma::load_matrix_sync(bf, sb[warp], 16);
        wmma::mma_sync(acc, af, bf, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(sc[warp], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        const int r = row0 + e / 16, cc = col0 + e % 16;
        if (r < M && cc < N) c[(size_t)r * N + cc] = __half2float(sc[warp][e]);
    }
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm_fp16acc")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 63) // 64, (M + 15) // 16)
    wmma_gemm_kernel(grid, (128,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
