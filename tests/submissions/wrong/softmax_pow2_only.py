"""7a with a block reduction that is right only for power-of-two lengths: one thread per column of a
short row (`threads = min(1024, cols)`), and a shared-memory tree that halves `blockDim.x` each step.
With 31 threads the first step pairs 0..14 with 15..29 and thread 30's value is never added; with 1,000
the step from 125 to 62 drops one. Rows of 1,024 or more, and powers of two, come out right. It must be
rejected on the visible rows of 31 and 1,000 columns as a wrong result."""
CHAPTER_DIR = "07_reductions"
CELLS = {
    "softmax-solution": r'''
SOFTMAX_SRC = r"""
#define NEG_INF __int_as_float(0xff800000)

extern "C" __global__
void softmax_rows(const float* x, float* out, int rows, int cols)
{
    __shared__ float buf[1024];
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = out + (long long)blockIdx.x * cols;
    const int t = threadIdx.x;
    float m = NEG_INF;
    for (int j = t; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    buf[t] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {      // assumes blockDim.x is a power of two
        if (t < s) buf[t] = fmaxf(buf[t], buf[t + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = t; j < cols; j += blockDim.x) sum += expf(xr[j] - m);
    buf[t] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    sum = buf[0];
    for (int j = t; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) / sum;
}
"""
softmax_kernel = load_kernel(SOFTMAX_SRC, "softmax_rows", where="SOFTMAX_SRC")


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel((rows,), (min(1024, cols),), (x, out, np.int32(rows), np.int32(cols)))
''',
}
EXPECT = {"cell": "softmax-visible", "reason": "wrong-result", "device": "gpu"}
