"""1a's launcher hard-codes its grid to the largest visible size: 4,096 blocks of 256 threads, exactly
2^20 threads, "enough for every test". The kernel keeps its bounds check, so every n up to 2^20
is right, and so is every shape of the visible cell (1,000, 31 and 2^20). The hidden cell's
33,554,433 elements leave everything past 2^20 unwritten, so it must be rejected there as a wrong
result (the speed cell's 2^27 elements would fail the same way)."""
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
    vector_add_kernel((4096,), (256,), (a, b, out, np.int64(n)))  # 2**20 threads: the biggest test
''',
}
EXPECT = {"cell": "vector-add-hidden", "reason": "wrong-result", "device": "gpu"}
