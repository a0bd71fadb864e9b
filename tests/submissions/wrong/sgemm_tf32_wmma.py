"""Exercise 3 done on the tensor cores in TF32: one warp per 16 x 16 tile of C, A and B staged through
shared memory 8 columns of K at a time (zero past the edges), each fragment element rounded with
`wmma::__float_to_tf32` and multiplied by `wmma::mma_sync` with fp32 accumulation. That is what
torch.mm does with TF32 switched on, and the exercise is fp32 with TF32 off: the inputs keep only 10
of their 23 mantissa bits, so the answer is off by about 1e-3 relative, far outside the fp32
tolerance at every K. It must be rejected as a wrong result."""
CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
SGEMM_SRC = r"""
#include <mma.h>
using namespace nvcuda;

// C = A @ B, one warp per 16 x 16 tile of C, on the TF32 tensor cores.
extern "C" __global__ void sgemm_blocked(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(32) float As[16 * 8];   // A[row0 : row0+16, k0 : k0+8]
    __shared__ __align__(32) float Bs[8 * 16];   // B[k0 : k0+8, col0 : col0+16]
    __shared__ __align__(32) float Cs[16 * 16];
    const int lane = threadIdx.x;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;

    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c_frag;
    wmma::fill_fragment(c_frag, 0.0f);

    for (int k0 = 0; k0 < K; k0 += 8) {
        for (int e = lane; e < 16 * 8; e += 32) {
            const int ar = e / 8, ac = e % 8;    // A tile: 16 rows of 8
            As[e] = (row0 + ar < M && k0 + ac < K) ? A[(long long)(row0 + ar) * K + k0 + ac] : 0.0f;
            const int br = e / 16, bc = e % 16;  // B tile: 8 rows of 16
            Bs[e] = (k0 + br < K && col0 + bc < N) ? B[(long long)(k0 + br) * N + col0 + bc] : 0.0f;
        }
        __syncwarp();
        wmma::load_matrix_sync(a_frag, As, 8);
        wmma::load_matrix_sync(b_frag, Bs, 16);
        for (int t = 0; t < a_frag.num_elements; ++t) a_frag.x[t] = wmma::__float_to_tf32(a_frag.x[t]);
        for (int t = 0; t < b_frag.num_elements; ++t) b_frag.x[t] = wmma::__float_to_tf32(b_frag.x[t]);
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
        __syncwarp();
    }
    wmma::store_matrix_sync(Cs, c_frag, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 16 * 16; e += 32) {
        const int r = row0 + e / 16, c = col0 + e % 16;
        if (r < M && c < N) C[(long long)r * N + c] = Cs[e];
    }
}
"""
sgemm_kernel = load_kernel(SGEMM_SRC, "sgemm_blocked", where="SGEMM_SRC")


def sgemm(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    sgemm_kernel(((n + 15) // 16, (m + 15) // 16), (32,), (a, b, out, np.int32(m), np.int32(n), np.int32(k)))
''',
}
EXPECT = {"cell": "sgemm-visible", "reason": "wrong-result", "device": "gpu"}
