"""A tiled GEMM on the ordinary FMA units (16x16 tiles in shared memory, fp32 multiply-adds): correct
for every shape, but no tensor cores. The tensor-core cell must fail with a message that names the
kernel and its FFMA count (on a CPU too), and so must the speed cell; the correctness cells pass."""
CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": r'''
WMMA_GEMM_SRC = r"""
#include <cuda_fp16.h>

// A tiled GEMM on the FMA units: 16x16 tiles of A and B in shared memory, one output per thread,
// fp32 multiply-adds. Correct for any shape, but no tensor cores.
#define T 16

extern "C" __global__
void fma_gemm(const half* a, const half* b, float* c, int M, int N, int K)
{
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
wmma_gemm_kernel = load_kernel(WMMA_GEMM_SRC, "fma_gemm")


def wmma_gemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    wmma_gemm_kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
