"""1a's kernel without its bounds check: every thread of the rounded-up grid writes `out[i] = a[i] +
b[i]`, so when n is not a multiple of 256 the last block writes up to 255 elements past the end of
`out` (and reads past the ends of a and b). Every element of `out` is right. It must be rejected for
writing out of bounds: the guard band after `out` changes (n = 1,000 and 31 in the visible cell).
Without guard bands the write lands in whatever the allocator put next, silently."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a[i] + b[i];  // the grid covers n, and a little more
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
