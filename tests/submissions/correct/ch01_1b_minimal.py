"""1b, the textbook-minimal fused kernel: one thread per element, blocks of 256, one pass that reads a,
x and b once and writes out once; the multiply and the add are written as two operations (no
explicit fmaf) and the relu as a comparison.

Why it should pass: the reference is relu(a*x + b) in float64 and fp32 rounding of one multiply and
one add is far inside the tolerance. Speed: the design of the calibration rung "1b fused, one
kernel" in assets/results/README.md, 1.98-1.99x torch eager on an H100 (10/10) and 1.79-1.82x on an
H200 (bars.toml "1b" calibration), against the bar of 1.5x: a 19% margin on the H200, 32% on the
H100. Measured: 1.788x (tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200,
2026-11-21).
"""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "fused-solution": r'''
FUSED_SRC = r"""
extern "C" __global__
void fused_axpb_relu(const float* a, const float* x, const float* b, float* out, long long n)
{
    long long i = blockIdx.x;
    i = i * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float y = a[i] * x[i];
    y = y + b[i];
    out[i] = y > 0.0f ? y : 0.0f;
}
"""
fused_kernel = load_kernel(FUSED_SRC, "fused_axpb_relu", where="FUSED_SRC")


def fused_axpb_relu(a, x, b, out):
    n = out.numel()
    fused_kernel(((n + 255) // 256,), (256,), (a, x, b, out, np.int64(n)))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "gpu"}
