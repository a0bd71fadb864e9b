"""Exercise 3 written the simplest register-blocked way: a 64 x 64 block tile, BK = 8, 256 threads
with 4 x 4 outputs each, A's tile not transposed. Correct on every shape; its speed sits just above
the 0.30x bar (0.32x on an H200, where the solution's 8 x 8 per thread reached 0.66x), so the tests
assert only its correctness. Everything else is the solution."""
CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
SGEMM_SRC = r"""
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

extern "C" __global__ void __launch_bounds__(256)
sgemm_blocked(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;

    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 256) {
            const int r = block_row + e / BK, c = k0 + e % BK;
            As[e / BK][e % BK] = (r < M && c < K) ? A[(long long)r * K + c] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += 256) {
            const int r = k0 + e / BN, c = block_col + e % BN;
            Bs[e / BN][e % BN] = (r < K && c < N) ? B[(long long)r * N + c] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) {
                a[i] = As[trow * TM + i][k];
            }
            #pragma unroll
            for (int j = 0; j < TN; ++j) {
                b[j] = Bs[k][tcol * TN + j];
            }
            #pragma unroll
            for (int i = 0; i < TM; ++i) {
                #pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int r = block_row + trow * TM + i, c = block_col + tcol * TN + j;
            if (r < M && c < N) {
                C[(long long)r * N + c] = acc[i][j];
            }
        }
    }
}
"""
sgemm_kernel = load_kernel(SGEMM_SRC, "sgemm_blocked")

def sgemm(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    sgemm_kernel(((n + 63) // 64, (m + 63) // 64), (256,), (a, b, out, np.int32(m), np.int32(n), np.int32(k)))
''',
}
