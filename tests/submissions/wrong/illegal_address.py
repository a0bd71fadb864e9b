"""1a's launcher passes the kernel's arguments in the wrong order, `(a, b, n, out)`, which CuPy
cannot notice: the kernel takes n (1,000) as the address of `out` and the address of `out` as n, so
its stores go to addresses 1,000 + 4i and the kernel dies with an illegal memory access. That error
is sticky: the process's CUDA context is unusable afterwards. It must be rejected as a crash of this
one check, with every other cell and notebook still graded on a working GPU."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    vector_add_kernel((blocks,), (threads,), (a, b, np.int64(n), out))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "crashed", "device": "gpu"}
