"""1a's kernel and launcher are the solution's, but the first call also sets aside as much of the L2
cache as the GPU allows for persisting accesses (`cupy.cuda.runtime.deviceSetLimit` with
cudaLimitPersistingL2CacheSize, number 6, which CuPy has no name for) and puts an access-policy window
with hitRatio 1.0 over the start of `a` on torch's stream (`cudaStreamSetAttribute`, through
cuda-bindings when installed), so that `a` stays in L2 between timed calls. Both settings outlive the
call and change the device for whatever runs after it. It must be rejected in the speed cell because
the learner's code changed the L2 persistence settings: the verifier resets them and reads the
persisting-L2 limit back after the learner's calls."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
import cupy

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

LIMIT_PERSISTING_L2_CACHE_SIZE = 6    # cudaLimitPersistingL2CacheSize
ATTR_MAX_PERSISTING_L2_CACHE_SIZE = 108  # cudaDevAttrMaxPersistingL2CacheSize
ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE = 109  # cudaDevAttrMaxAccessPolicyWindowSize
_window_on = [None]  # the data pointer the access-policy window covers


def _reserve_l2():
    """Set aside as much L2 as this GPU allows for persisting lines (once: it stays set)."""
    most = cupy.cuda.runtime.deviceGetAttribute(ATTR_MAX_PERSISTING_L2_CACHE_SIZE, torch.cuda.current_device())
    cupy.cuda.runtime.deviceSetLimit(LIMIT_PERSISTING_L2_CACHE_SIZE, most)


def _keep_in_l2(t):
    """Mark the start of t as persisting for the work launched on torch's stream from now on."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        return  # the reserved L2 alone already changes the device
    value = cudart.cudaStreamAttrValue()
    window = value.accessPolicyWindow
    window.base_ptr = t.data_ptr()
    window.num_bytes = min(t.numel() * t.element_size(), cupy.cuda.runtime.deviceGetAttribute(
        ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE, torch.cuda.current_device()))
    window.hitRatio = 1.0
    window.hitProp = cudart.cudaAccessProperty.cudaAccessPropertyPersisting
    window.missProp = cudart.cudaAccessProperty.cudaAccessPropertyStreaming
    cudart.cudaStreamSetAttribute(torch.cuda.current_stream().cuda_stream,
                                  cudart.cudaStreamAttrID.cudaLaunchAttributeAccessPolicyWindow, value)


def vector_add(a, b, out):
    if _window_on[0] is None:
        _reserve_l2()
    if _window_on[0] != a.data_ptr():
        _keep_in_l2(a)
        _window_on[0] = a.data_ptr()
    n = out.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    vector_add_kernel((blocks,), (threads,), (a, b, out, np.int64(n)))
''',
}
EXPECT = {"cell": "vector-add-speed", "reason": "l2-persist", "device": "gpu"}
