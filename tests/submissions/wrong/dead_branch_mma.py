"""Exercise 4 as an FMA GEMM (16 x 16 tiles in shared memory, fp32 multiply-adds, correct for every
shape) that carries a real WMMA multiply in a branch that never runs (`if (K < 0)`, which the
compiler cannot rule out). The SASS therefore contains HMMA instructions and a static inspection of
the compiled kernel passes it, but no tensor-core instruction ever executes. It must be rejected by
the tensor-core cell on a GPU, which has to count the tensor-core instructions actually executed
(a profiler counter, for instance), not the ones present. On a CPU the static check cannot see the
difference; the speed cell would also reject it as below the bar, which is not what this tests."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#define T 16

extern "C" __global__
void wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K)
{
    if (K < 0) {  // never: keeps one tensor-core MMA in the compiled kernel
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
        wmma::fill_fragment(fc, 0.0f);
        wmma::load_matrix_sync(fa, a, 16);
        wmma::load_matrix_sync(fb, b, 16);
        wmma::mma_sync(fc, fa, fb, fc);
        wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
        return;
    }
    __shared__ float As[T][T];
    __shared__ float Bs[T][T + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (row < M && k0 + tx < K) ? __half2float(a[(size_t)row * K + k0 + tx]) : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? __half2float(b[(size_t)(k0 + ty) * N + col]) : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < T; ++kk) acc = fmaf(As[ty][kk], Bs[kk][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) c[(size_t)row * N + col] = acc;
}
"""
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "wmma_gemm", where="WMMA_GEMM_SRC")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    wmma_gemm_kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
EXPECT = {"cell": "wmma-tensor-cores", "reason": "no-tensor-cores", "device": "gpu"}
