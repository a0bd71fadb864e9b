"""1b with 16-byte accesses: each thread computes one group of four outputs, loading a, x and b as
float4 when all four pointers are 16-byte aligned (scalar loads otherwise, and for the last partial
group), blocks of 128 threads, no loop.

Independent of the solution: work is counted in groups of four, the grid in groups, and the relu is
fmaxf on each lane of the vector.

Why it should pass: groups cover [0, n) and each element is bounds-checked in the scalar path.
Speed: the fused kernel already moves only 16 bytes per element; assets/results/README.md measured
the scalar fused kernel at 1.98-1.99x eager on an H100 (100% of the copy ceiling) and 1.79-1.82x on
an H200, and 16-byte loads raised 1a from 0.78-0.80x to 1.00x on the H200 (bars.toml "1a-stretch").
Measured: 2.047x (tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200,
2026-11-21), 36% above the bar of 1.5x.
"""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "fused-solution": r'''
FUSED_SRC = r"""
__device__ __forceinline__ float relu_axpb(float a, float x, float b)
{
    return fmaxf(a * x + b, 0.0f);
}

extern "C" __global__
void fused_axpb_relu(const float* a, const float* x, const float* b, float* out, long long n)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = 4 * g;
    if (first >= n) return;
    const unsigned long long bits = reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(x)
                                  | reinterpret_cast<unsigned long long>(b) | reinterpret_cast<unsigned long long>(out);
    if ((bits & 15ull) == 0 && first + 4 <= n) {
        const float4 va = reinterpret_cast<const float4*>(a)[g];
        const float4 vx = reinterpret_cast<const float4*>(x)[g];
        const float4 vb = reinterpret_cast<const float4*>(b)[g];
        reinterpret_cast<float4*>(out)[g] = make_float4(relu_axpb(va.x, vx.x, vb.x), relu_axpb(va.y, vx.y, vb.y),
                                                        relu_axpb(va.z, vx.z, vb.z), relu_axpb(va.w, vx.w, vb.w));
        return;
    }
    for (long long i = first; i < n && i < first + 4; ++i)
        out[i] = relu_axpb(a[i], x[i], b[i]);
}
"""
fused_kernel = load_kernel(FUSED_SRC, "fused_axpb_relu", where="FUSED_SRC")


def fused_axpb_relu(a, x, b, out):
    n = out.numel()
    groups = -(-n // 4)
    fused_kernel((-(-groups // 128),), (128,), (a, x, b, out, np.int64(n)))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "gpu"}
