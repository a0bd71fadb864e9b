"""Exercise 4 dressed as a tensor-core kernel: it includes <mma.h>, opens `namespace nvcuda`, declares
an accumulator fragment and fills it, and says "tensor cores" in its comments, but the product is a
16 x 16-tiled GEMM on the ordinary FMA units (fp32 multiply-adds from shared memory), correct for
every shape. The fragment is never used, so the compiler drops it and the SASS holds FFMA and no
HMMA. A grep for "wmma" in the source passes it. It must be rejected by the tensor-core cell, on a
CPU too (NVRTC compiles it and its SASS or PTX is inspected)."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// Tensor-core GEMM: 16 x 16 tiles of A and B staged in shared memory, one output per thread.
#define T 16

extern "C" __global__
void wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T + 1];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_frag;  // the tensor-core accumulator
    wmma::fill_fragment(acc_frag, 0.0f);
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
EXPECT = {"cell": "wmma-tensor-cores", "reason": "no-tensor-cores", "device": "cpu"}
