"""A student with mistakes: napkin math counts only the reads (8n bytes), the 1a kernel skips the
last element (`i < n - 1`), and 1b forgets the relu. On a GPU every check of those exercises fails;
the fusion napkin math (1.1) is right and earns its point."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "napkin-solution": '''
def vector_add_bytes(n):
    return 8 * n

def floor_ms(nbytes, gbps):
    return nbytes / (gbps * 1e9) * 1e3
''',
    "vector-add-solution": r'''
VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add")

def vector_add(a, b, out):
    n = out.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    vector_add_kernel((blocks,), (threads,), (a, b, out, np.int64(n)))
''',
    "fused-solution": r'''
FUSED_SRC = r"""
extern "C" __global__
void fused_axpb_relu(const float* a, const float* x, const float* b, float* out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * x[i] + b[i];
}
"""
fused_kernel = load_kernel(FUSED_SRC, "fused_axpb_relu")

def fused_axpb_relu(a, x, b, out):
    n = out.numel()
    fused_kernel(((n + 255) // 256,), (256,), (a, x, b, out, np.int64(n)))
''',
}
