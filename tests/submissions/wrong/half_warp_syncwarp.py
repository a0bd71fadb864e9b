"""1a's kernel with a `__syncwarp(0x0000ffff)` a learner added "to be safe" after reading about warp
synchronisation: every lane calls it, but the mask names only lanes 0-15, so lanes 16-31 take part in a
barrier their mask leaves them out of. The values are right and nothing is out of bounds. Only
compute-sanitizer's synccheck sees the invalid barrier: it must be rejected by `ladder check
--sanitize`, which names the kernel and the line."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    __syncwarp(0x0000ffffu);   // meant: wait for the warp; names only half of it
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")


def vector_add(a, b, out):
    n = out.numel()
    threads = 256
    vector_add_kernel(((n + threads - 1) // threads,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-visible", "reason": "sanitizer-synccheck", "device": "gpu", "sanitize": "synccheck"}
