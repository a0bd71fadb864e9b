"""1a's kernel is right, but the launcher asks for blocks of 2,048 threads ("fewer, bigger blocks"),
more than the 1,024 a block may hold, so every launch is refused (CUDA_ERROR_INVALID_VALUE) and
nothing runs. The launcher wraps the launch in `try: ... except Exception: pass`, so no error is
seen and `out` keeps whatever it held before the call (the previous result, when the buffer is
reused; poison in a fresh one). It must be rejected because the launch failed and the error was
swallowed (its output is wrong too; the swallowed error is the cause)."""
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
    blocks = (n + threads - 1) // threads
    try:
        vector_add_kernel((blocks,), (threads,), (a, b, out, np.int64(n)))
    except Exception:
        pass
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "swallowed-error", "device": "gpu"}
