"""1a with 16-byte accesses: each thread adds one group of four floats (a float4 when all three
pointers are 16-byte aligned), blocks of 128 threads, one thread per group and no loop; the last
group, when n is not a multiple of 4, is added element by element with bounds checks.

Independent of the solution: the unit of work is a group of 4, not an element, the grid is sized in
groups, and alignment is checked inside the kernel (a pointer that is not 16-byte aligned, as a view
into a guard-banded buffer could be, falls back to four plain loads per group in the same kernel, so
one kernel always does the work).

Why it should pass: the group index covers [0, ceil(n/4)), each group checks its elements against n,
so every size from 1 up is right. Speed: assets/results/README.md measured 16-byte loads at 0.98x
torch.add (H100, float4 grid-stride, 10/10) and bars.toml "1a-stretch" records "float4 1.00x" on an
H200 (the notebook: "a grid with one thread per float4 and no loop at all matched torch"), against
the bar of 0.70x: about a 40% margin. Measured: 1.003x (tests/submissions/correct/_measure.py,
in-process, 2 timed runs, NVIDIA H200, 2026-11-21).
"""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // my group of four
    const long long first = 4 * g;
    if (first >= n) return;
    const bool aligned = ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)
                           | reinterpret_cast<unsigned long long>(out)) & 15ull) == 0;
    if (aligned && first + 4 <= n) {
        const float4 x = reinterpret_cast<const float4*>(a)[g];
        const float4 y = reinterpret_cast<const float4*>(b)[g];
        float4 s;
        s.x = x.x + y.x;
        s.y = x.y + y.y;
        s.z = x.z + y.z;
        s.w = x.w + y.w;
        reinterpret_cast<float4*>(out)[g] = s;
    } else {
        for (long long i = first; i < first + 4 && i < n; ++i)
            out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    groups = (n + 3) // 4
    threads = 128
    vector_add_kernel(((groups + threads - 1) // threads,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cells": ["vector-add-visible", "vector-add-hidden", "vector-add-speed"], "device": "gpu"}
