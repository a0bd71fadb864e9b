"""1a launched on a side stream of its own and left running: the launcher makes a non-blocking CuPy
stream wait for the inputs (an event recorded on torch's stream), launches there and returns without
waiting. The kernel is a deliberately slow grid-stride loop over only 64 blocks of 128 threads (a
small fraction of the copy bandwidth, far below 1a's 0.70x bar) but correct, and every result is
complete by the next device-wide synchronize. CUDA events recorded on torch's stream around the call
measure only the launch, so an event timer would report it faster than torch.add. It must be rejected
as below the bar: the verifier synchronizes the whole device and times with its own host clock,
which sees the real, slow kernel."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": r'''
import cupy

VECTOR_ADD_SRC = r"""
extern "C" __global__
void vector_add(const float* a, const float* b, float* out, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a[i] + b[i];
    }
}
"""
vector_add_kernel = load_kernel(VECTOR_ADD_SRC, "vector_add", where="VECTOR_ADD_SRC")

_side_stream = None


def vector_add(a, b, out):
    global _side_stream
    if _side_stream is None:
        _side_stream = cupy.cuda.Stream(non_blocking=True)
    # The inputs were written on torch's stream: the side stream waits for that work, then runs ours.
    inputs_ready = cupy.cuda.Event(disable_timing=True)
    inputs_ready.record(cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream))
    _side_stream.wait_event(inputs_ready)
    with _side_stream:
        vector_add_kernel((64,), (128,), (a, b, out, np.int64(out.numel())))
    # no synchronize: return while the kernel is still running
''',
}
EXPECT = {"cell": "vector-add-speed", "reason": "below-bar", "device": "gpu"}
