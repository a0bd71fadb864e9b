"""1a's kernel reads one element past the end of `a`: each thread loads `a[i + 1]` to "prefetch" its
neighbour's value and the bounds check guards only the store. Every value it writes is right (the
prefetched value is never used for the last element), and nothing is written out of bounds, so the
guard bands see nothing. Only compute-sanitizer's memcheck sees the read past the allocation: it must
be rejected by `ladder check --sanitize`, which names the kernel and the line."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float next = (i < n) ? a[i + 1] : 0.0f;   // prefetch the neighbour: reads a[n] for the last one
    if (i < n) {
        out[i] = a[i] + b[i] + 0.0f * (next - next);
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    threads = 256
    vector_add_kernel(((n + threads - 1) // threads,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "sanitizer-memcheck", "device": "gpu", "sanitize": "memcheck"}
