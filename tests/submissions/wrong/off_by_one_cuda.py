"""1a's kernel with an off-by-one bounds check, `if (i <= n)`: the thread with i = n writes one element
past the end of `out` (and reads one past a and b) whenever the grid has a thread to spare, which
it has unless n is a multiple of 256. Every element of `out` is right. It must be rejected for
writing out of bounds: the first float of the guard band after `out` changes (n = 1,000 in the
visible cell)."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    vector_add_kernel((blocks,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "out-of-bounds", "device": "gpu"}
