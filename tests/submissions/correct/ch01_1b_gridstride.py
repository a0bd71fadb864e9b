"""1b as a grid-stride loop: 1024-thread blocks, 8 blocks per SM, and each trip handles two elements
one grid-width apart, with all six loads issued before the two stores.

Independent of the solution: a fixed grid tied to the SM count, a loop in every thread, two elements
per trip, `__restrict__` pointers.

Why it should pass: elements base + {0, 1} * width for base stepping by 2 * width cover [0, n) once
each, every access guarded by `< n`. Speed: still one pass, 16 bytes per element; the fused
calibration rung is 1.98-1.99x eager (H100) and 1.79-1.82x (H200) in assets/results/README.md, and a
grid-stride loop cost the float4 1a kernel 2-4% there (0.96x against 1.00x). Measured: 1.836-1.865x
(tests/submissions/correct/_measure.py, in-process, NVIDIA H200, 2026-11-21), 22% above the bar of
1.5x.
"""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "fused-solution": r'''
FUSED_SRC = r"""
extern "C" __global__ void __launch_bounds__(1024)
fused_axpb_relu(const float* __restrict__ a, const float* __restrict__ x, const float* __restrict__ b,
                float* __restrict__ out, long long n)
{
    const long long width = (long long)gridDim.x * blockDim.x;
    for (long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; i0 < n; i0 += 2 * width) {
        const long long i1 = i0 + width;
        const bool second = i1 < n;
        const float a0 = a[i0], x0 = x[i0], b0 = b[i0];
        const float a1 = second ? a[i1] : 0.0f;
        const float x1 = second ? x[i1] : 0.0f;
        const float b1 = second ? b[i1] : 0.0f;
        out[i0] = fmaxf(fmaf(a0, x0, b0), 0.0f);
        if (second) out[i1] = fmaxf(fmaf(a1, x1, b1), 0.0f);
    }
}
"""
fused_kernel = load_kernel(FUSED_SRC, "fused_axpb_relu", where="FUSED_SRC")


def fused_axpb_relu(a, x, b, out):
    n = out.numel()
    sms = session.gpu.sm_count if session.has_gpu else 1
    blocks = max(1, min(8 * sms, (n + 1023) // 1024))
    fused_kernel((blocks,), (1024,), (a, x, b, out, np.int64(n)))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "gpu"}
