"""7a, a row softmax that reads each row from memory once: the block's threads keep the row in
registers (up to 8 float4 groups a thread, so rows of up to 32,768 floats with 1,024 threads), find its
maximum, turn the kept values into exp(x - max) in place, add them up and write them scaled by 1 / sum.
Both reductions are warp shuffles (xor butterflies) and one shared-memory step across warps. Rows too
long to keep, or not a multiple of 4 floats (50,257), take a plain loop that reads the row three times.

Independent of the solution: two exact passes (max, then sum) over registers instead of the online
(max, sum) merge and an L2 re-read; xor shuffles; a block size chosen so each thread keeps at most 8
groups; its own names.

Why it should pass: at the speed size (4,096 x 32,000, cols % 4 == 0, 8,000 groups over 1,024 threads)
every element is read once and written once, 8 bytes, where the solution (1.234-1.243x torch.softmax on
an H100, bars.toml "7a", 1.0x bar) reads most rows a second time from DRAM (Nsight Compute counted the
matrix read 1.93 times on an H100, assets/results/notebooks/text-facts/h100/traffic.csv).
`__launch_bounds__(1024)` keeps the 32 kept floats and the rest within the 64 registers a 1,024-thread block
may use: one block per SM. Accepted on every cell, speed included, on both paths by the exploit suite on an
H100 and on an H200 (assets/results/exploits/suite-warm-rule-h100x4, suite-h200x4). Compiled through NVRTC
on a CPU (`ladder compile`).
"""
CHAPTER_DIR = "07_reductions"
CELLS = {
    "softmax-solution": r'''
SOFTMAX_SRC = r"""
#define MINUS_INF __int_as_float(0xff800000)
#define KEPT 8          // float4 groups a thread keeps in registers

// The whole block's max (take_max) or sum of v; every thread gets it. Uses scratch[0..31].
__device__ float block_reduce(float v, bool take_max, float* scratch)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, offset);
        v = take_max ? fmaxf(v, other) : v + other;
    }
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        const int warps = blockDim.x >> 5;
        v = threadIdx.x < warps ? scratch[threadIdx.x] : (take_max ? MINUS_INF : 0.0f);
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float other = __shfl_xor_sync(0xffffffffu, v, offset);
            v = take_max ? fmaxf(v, other) : v + other;
        }
        if (threadIdx.x == 0) scratch[0] = v;
    }
    __syncthreads();
    v = scratch[0];
    __syncthreads();    // scratch is free again for the next reduction
    return v;
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_rows(const float* x, float* out, int rows, int cols)
{
    __shared__ float scratch[32];
    const float* src = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    const int groups = cols / 4;
    const bool in_registers = (cols % 4 == 0) && groups <= KEPT * (int)blockDim.x;

    if (in_registers) {
        const float4* src4 = reinterpret_cast<const float4*>(src);
        float4 kept[KEPT];
        float biggest = MINUS_INF;
#pragma unroll
        for (int i = 0; i < KEPT; ++i) {
            const int g = threadIdx.x + i * blockDim.x;
            kept[i] = g < groups ? src4[g] : make_float4(MINUS_INF, MINUS_INF, MINUS_INF, MINUS_INF);
            biggest = fmaxf(biggest, fmaxf(fmaxf(kept[i].x, kept[i].y), fmaxf(kept[i].z, kept[i].w)));
        }
        biggest = block_reduce(biggest, true, scratch);
        float total = 0.0f;
#pragma unroll
        for (int i = 0; i < KEPT; ++i) {
            kept[i].x = __expf(kept[i].x - biggest);
            kept[i].y = __expf(kept[i].y - biggest);
            kept[i].z = __expf(kept[i].z - biggest);
            kept[i].w = __expf(kept[i].w - biggest);
            total += (kept[i].x + kept[i].y) + (kept[i].z + kept[i].w);
        }
        const float scale = 1.0f / block_reduce(total, false, scratch);
        float4* dst4 = reinterpret_cast<float4*>(dst);
#pragma unroll
        for (int i = 0; i < KEPT; ++i) {
            const int g = threadIdx.x + i * blockDim.x;
            if (g < groups)
                dst4[g] = make_float4(kept[i].x * scale, kept[i].y * scale, kept[i].z * scale, kept[i].w * scale);
        }
    } else {
        float biggest = MINUS_INF;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) biggest = fmaxf(biggest, src[j]);
        biggest = block_reduce(biggest, true, scratch);
        float total = 0.0f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) total += __expf(src[j] - biggest);
        const float scale = 1.0f / block_reduce(total, false, scratch);
        for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = __expf(src[j] - biggest) * scale;
    }
}
"""
softmax_kernel = load_kernel(SOFTMAX_SRC, "softmax_rows", where="SOFTMAX_SRC")


def softmax(x, out):
    rows, cols = x.shape
    groups = -(-cols // 4)
    # Whole warps, enough that no thread keeps more than 8 groups, at most 1,024.
    warps = min(32, max(1, -(-groups // (8 * 32))))
    softmax_kernel((rows,), (32 * warps,), (x, out, np.int32(rows), np.int32(cols)))
''',
}
EXPECT = {"cells": ["softmax-visible", "softmax-hidden", "softmax-speed"], "device": "gpu"}
