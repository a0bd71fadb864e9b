"""1a written as a grid-stride loop whose index never moves: `i + stride` where `i += stride` was
meant (NVRTC only warns that the expression's result is unused). Every thread with i < n stores
`out[i]` forever, so the kernel never finishes. It must be rejected as timed out, and the worker
killed, which frees the GPU for the next check."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i + stride) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    vector_add_kernel((1024,), (256,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "timed-out", "device": "gpu"}
