"""1a, the textbook-minimal design: one thread per element, blocks of 256 threads, a grid just large
enough to cover n. Nothing else: no vector loads, no loop.

Why it should pass: correctness needs only the bounds check `i < n`. Speed: this exact design is the
calibration rung "1a one element per thread" in assets/results/README.md: 0.91x torch.add on an H100
(10 of 10 runs, 0.91 each) and 0.78-0.80x on an H200 (bars.toml "1a" calibration), against the bar
of 0.70x: a 30% margin on the H100, 11-14% on the H200 (the thinnest margin of this suite).
Measured: 0.785x (tests/submissions/correct/_measure.py, in-process, 2 timed runs, NVIDIA H200,
2026-11-21), 12% above the bar.
"""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    // My element: blocks tile the array, 256 consecutive elements each.
    const unsigned long long idx = (unsigned long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (idx < (unsigned long long)n)
        out[idx] = a[idx] + b[idx];
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")

BLOCK = 256


def vector_add(a, b, out):
    n = out.numel()
    grid = -(-n // BLOCK)          # ceil(n / BLOCK) blocks
    vector_add_kernel((grid,), (BLOCK,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cells": ["vector-add-visible", "vector-add-hidden", "vector-add-speed"], "device": "gpu"}
