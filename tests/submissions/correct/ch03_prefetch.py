"""3 with register prefetching and double-buffered shared memory: a 64 x 128 block tile, BK = 8, 128
threads (4 warps) with 8 x 8 outputs each, split into two 8 x 4 halves 64 columns apart so that a
thread's row of B comes out of shared memory as two float4 reads.

Independent of the solution: a rectangular tile with half the threads, a software pipeline (the next
slice of A and B is loaded from global memory into registers while the current slice is multiplied
out of the other shared buffer, so one `__syncthreads()` per step suffices), float4 reads of both
shared tiles, and a split column ownership.

Why it should pass: zero-filled loads outside A and B, guarded stores, fp32 FMAs: exact enough for
the fp32 tolerance at every shape. Speed: the 8 x 8 intensity of the solution (0.66x torch on an
H200, assets/results/README.md) plus overlap of global loads with arithmetic, the ingredient of the
stretch kernel that measured 0.81x there. Measured: 0.688x (tests/submissions/correct/_measure.py,
in-process, 2 timed runs, NVIDIA H200, 2026-11-21), 129% above the bar of 0.30x.
"""
CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": r'''
SGEMM_SRC = r"""
#define BM 64
#define BN 128
#define BK 8
#define THREADS 128
#define A_PER (BM * BK / THREADS)     // 4 floats of A per thread per slice
#define B_PER (BK * BN / THREADS)     // 8 floats of B
#define AS_LD (BM + 4)                // padded row of the transposed A tile (16-byte multiple)

extern "C" __global__ void __launch_bounds__(THREADS, 4)
sgemm_blocked(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x;
    const int ty = t / 16, tx = t % 16;   // rows 8 ty .. 8 ty + 7; columns 4 tx .. +3 and 64 + 4 tx .. +3
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // Loading a slice: A's 64 x 8 tile is 512 floats, 4 per thread; B's 8 x 128 tile is 1024, 8 per
    // thread. Thread t reads column t % 8 of A rows t / 8 + 16 s, and column t of B rows s: the
    // column never changes, so one base pointer per matrix serves every load.
    const int a_r = t / BK, a_c = t % BK;
    const float* a_base = A + (size_t)(bm + a_r) * K + a_c;
    const float* b_base = B + bn + t;
    const bool b_in = bn + t < N;

    float ra[A_PER], rb[B_PER];
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    // Global -> registers for the slice starting at k0 (zeros outside A and B).
    auto fetch = [&](int k0) {
        const bool a_in = k0 + a_c < K;
        #pragma unroll
        for (int s = 0; s < A_PER; ++s)
            ra[s] = (a_in && bm + a_r + 16 * s < M) ? a_base[(size_t)16 * s * K + k0] : 0.0f;
        #pragma unroll
        for (int s = 0; s < B_PER; ++s)
            rb[s] = (b_in && k0 + s < K) ? b_base[(size_t)(k0 + s) * N] : 0.0f;
    };
    // Registers -> shared buffer `buf` (A transposed: As[buf][k][m]).
    auto stash = [&](int buf) {
        #pragma unroll
        for (int s = 0; s < A_PER; ++s) As[buf][a_c][a_r + 16 * s] = ra[s];
        #pragma unroll
        for (int s = 0; s < B_PER; ++s) Bs[buf][s][t] = rb[s];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) fetch(k0 + BK);          // in flight while this slice is multiplied
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][8 * ty]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][8 * ty + 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][4 * tx]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + 4 * tx]);
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (more) stash(buf ^ 1);          // the other buffer: nobody reads it during this step
        __syncthreads();
        buf ^= 1;
    }

    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = bm + 8 * ty + i;
        if (m >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int n = bn + (j < 4 ? 4 * tx + j : 64 + 4 * tx + (j - 4));
            if (n < N) C[(size_t)m * N + n] = acc[i][j];
        }
    }
}
"""
sgemm_kernel = load_kernel(SGEMM_SRC, "sgemm_blocked", where="SGEMM_SRC")


def sgemm(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    sgemm_kernel((-(-N // 128), -(-M // 64)), (128,), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
''',
}
EXPECT = {"cells": ["sgemm-visible", "sgemm-hidden", "sgemm-speed"], "device": "gpu"}
