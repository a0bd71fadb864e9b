"""The plan of the exercise, staged through shared memory, but each thread loads a 16-byte chunk and
stores it before loading the next (a loop with a trip count the compiler does not know), so every
slice waits for four global-memory round trips one after the other. Correct and on tensor cores;
measured 0.14x torch.mm on an H200 (smoke run, 2026-11), so it must fail the speed cell (bar 0.20x)."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
using namespace nvcuda;

// Block tile BM x BN of C, stepping through K in slices of BK. 8 warps in a 2 x 4 grid: each warp
// owns a WM x WN piece of the block tile, that is FM x FN fragments of 16 x 16.
#define BM 128
#define BN 128
#define BK 32
#define WARPS_M 2
#define WARPS_N 4
#define THREADS (32 * WARPS_M * WARPS_N)
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define FM (WM / 16)
#define FN (WN / 16)
// Rows of the shared tiles are padded by 8 halves (16 bytes), so that the 8 rows a fragment load
// reads at once start in different banks. A padded stride must stay a multiple of 8 halves.
#define A_STRIDE (BK + 8)
#define B_STRIDE (BN + 8)

extern "C" __global__ void __launch_bounds__(THREADS)
wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K)
{
    __shared__ __align__(32) half As[BM * A_STRIDE];          // A[block rows, k0:k0+BK]
    __shared__ __align__(32) half Bs[BK * B_STRIDE];          // B[k0:k0+BK, block columns]
    __shared__ __align__(32) float Cs[THREADS / 32][16 * 16]; // one staging tile per warp, for edges

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int block_m = blockIdx.y * BM, block_n = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
    #pragma unroll
    for (int i = 0; i < FM; ++i)
        #pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    // 16-byte loads need rows that start on 16-byte boundaries: a row length that is a multiple
    // of 8 halves. Otherwise every element is loaded on its own.
    const bool a_wide = (K % 8) == 0;
    const bool b_wide = (N % 8) == 0;
    const half zero = __float2half(0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Stage A[block_m : block_m+BM, k0 : k0+BK]: BM*BK/8 chunks of 8 halves, 2 per thread.
        // Whatever lies outside the matrix is stored as zero, so it adds nothing to the sums.
        for (int i = tid; i < BM * BK / 8; i += THREADS) {
            const int r = i / (BK / 8), col = (i % (BK / 8)) * 8;
            const int gr = block_m + r, gc = k0 + col;
            half* dst = &As[r * A_STRIDE + col];
            if (a_wide) {
                uint4 v = make_uint4(0, 0, 0, 0);
                if (gr < M && gc < K) v = *reinterpret_cast<const uint4*>(a + (size_t)gr * K + gc);
                *reinterpret_cast<uint4*>(dst) = v;
            } else {
                #pragma unroll
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gr < M && gc + e < K) ? a[(size_t)gr * K + gc + e] : zero;
            }
        }
        // Stage B[k0 : k0+BK, block_n : block_n+BN] the same way.
        for (int i = tid; i < BK * BN / 8; i += THREADS) {
            const int r = i / (BN / 8), col = (i % (BN / 8)) * 8;
            const int gr = k0 + r, gc = block_n + col;
            half* dst = &Bs[r * B_STRIDE + col];
            if (b_wide) {
                uint4 v = make_uint4(0, 0, 0, 0);
                if (gr < K && gc < N) v = *reinterpret_cast<const uint4*>(b + (size_t)gr * N + gc);
                *reinterpret_cast<uint4*>(dst) = v;
            } else {
                #pragma unroll
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gr < K && gc + e < N) ? b[(size_t)gr * N + gc + e] : zero;
            }
        }
        __syncthreads();  // the tiles are complete before any warp reads them

        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag[FN];
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                wmma::load_matrix_sync(a_frag[i], &As[(warp_m * WM + i * 16) * A_STRIDE + kk], A_STRIDE);
            #pragma unroll
            for (int j = 0; j < FN; ++j)
                wmma::load_matrix_sync(b_frag[j], &Bs[kk * B_STRIDE + warp_n * WN + j * 16], B_STRIDE);
            // FM x FN MMAs from FM + FN fragment loads: each A fragment is used FN times, each B
            // fragment FM times, straight from registers.
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                #pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }
        __syncthreads();  // every warp is done with the tiles before they are overwritten
    }

    // Write C. A fragment that lies wholly inside C goes straight to global memory; one that
    // crosses the edge goes through this warp's staging tile, and only its in-range part is written.
    #pragma unroll
    for (int i = 0; i < FM; ++i) {
        #pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int row = block_m + warp_m * WM + i * 16;
            const int col = block_n + warp_n * WN + j * 16;
            if (row >= M || col >= N) continue;  // the same for the whole warp
            if (row + 16 <= M && col + 16 <= N && N % 4 == 0) {
                wmma::store_matrix_sync(c + (size_t)row * N + col, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(Cs[warp], acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 16 * 16; e += 32) {
                    const int r = row + e / 16, cc = col + e % 16;
                    if (r < M && cc < N) c[(size_t)r * N + cc] = Cs[warp][e];
                }
                __syncwarp();
            }
        }
    }
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 127) // 128, (M + 127) // 128)
    wmma_gemm_kernel(grid, (256,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
