"""1a's kernel does not compile (an undeclared variable). The grader must say so with the
student's own line, on a CPU (through NVRTC) as well as on a GPU."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] + b[idx];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add")

def vector_add(a, b, out):
    n = out.numel()
    vector_add_kernel(((n + 255) // 256,), (256,), (a, b, out, np.int64(n)))
''',
}
