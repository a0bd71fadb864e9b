"""1a's kernel is right, but the launcher asks for blocks of 2,048 threads, more than the 1,024 a
block may hold, and does not catch the refusal (unlike `swallowed_launch_failure`). It must be
rejected as a launch error, with the launch's grid and block and the 1,024-thread limit named."""
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
    threads = 2048  # fewer, bigger blocks
    vector_add_kernel(((n + threads - 1) // threads,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "launch-error", "device": "gpu", "message": "1024 threads"}
