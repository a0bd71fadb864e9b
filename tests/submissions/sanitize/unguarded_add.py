"""A student whose 1a kernel has no bounds check: every thread stores `out[i] = a[i] + b[i]`, also
the threads past n in the last block. For n a multiple of the block size (256) the answer is right,
and for most other n the stray accesses land in memory nobody checks, so results often look fine.
`ladder check --sanitize` must report it under memcheck: an invalid __global__ access in kernel
`vector_add`, at the line `out[i] = a[i] + b[i];`. Everything else is the solution."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a[i] + b[i];
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
