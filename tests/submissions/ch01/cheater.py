"""A student who cheats on 1a: the kernel is the solution's and is launched, but on the first element
only; `torch.add` then writes the answer into `out`. Every value is right, and a check run in the
notebook's kernel with no eye on torch would pass it (and time torch against itself, about 1.0x,
above the 0.70x bar). The grader's worker sees torch compute with the grader's tensors inside the
launcher: 1a's three cells fail (library-compute), 9 of 15 on a GPU (3 on a CPU)."""
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
    vector_add_kernel((1,), (1,), (a, b, out, np.int64(1)))  # looks like a launch
    torch.add(a, b, out=out)                                   # the actual answer
''',
}
