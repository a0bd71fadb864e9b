"""A student whose tiled SGEMM (32 x 32 shared-memory tiles) has no `__syncthreads()` after the
multiply-adds of a tile: a fast warp can overwrite As and Bs with the next tile while slower warps
still read the current one. It usually computes the right answer, so the correctness checks rarely
catch it. `ladder check --sanitize` must report it under racecheck: a race on shared memory in
kernel `sgemm_tiled`, between the tile's stores and its reads. Everything else is the solution."""
CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
SGEMM_SRC = r"""
#define TILE 32

extern "C" __global__
void sgemm_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(long long)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        // missing: __syncthreads(); before the next tile overwrites As and Bs
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
"""
sgemm_kernel = load_kernel(SGEMM_SRC, "sgemm_tiled", where="SGEMM_SRC")


def sgemm(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    grid = ((n + 31) // 32, (m + 31) // 32)
    sgemm_kernel(grid, (32, 32), (a, b, out, np.int32(m), np.int32(n), np.int32(k)))
''',
}
