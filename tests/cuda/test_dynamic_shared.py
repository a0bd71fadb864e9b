"""More than 48 KiB of dynamic shared memory (grader.cuda.kernels): a launch that asks for it opts its
kernel in (max_dynamic_shared_size_bytes, CUDA's cudaFuncAttributeMaxDynamicSharedMemorySize) up to the
GPU's per-block limit, and past that limit fails with a message that names the kernel, the bytes and the
limit. On a CPU the function is a stand-in that records what the launch did to it; the GPU test launches
a real kernel with 96 KiB."""

import numpy as np
import pytest

from conftest import HAS_GPU
from grader.cuda import kernels
from grader.cuda.kernels import CudaKernel
from grader.errors import KernelLaunchError

KIB = 1024
SRC = 'extern "C" __global__ void big(int n) { extern __shared__ float s[]; if (n < 0) s[0] = 0; }'


class FakeFunction:
    """What CuPy's RawKernel offers a launch: a call, static shared memory, and the settable attribute."""

    def __init__(self, static=0, refuse=False):
        self.shared_size_bytes = static
        self._max = 48 * KIB
        self.refuse = refuse
        self.sets, self.calls = [], []

    @property
    def max_dynamic_shared_size_bytes(self):
        return self._max

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        if self.refuse:
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE: invalid argument")
        self.sets.append(value)
        self._max = value

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, shared_mem))


@pytest.fixture
def h100(monkeypatch):
    monkeypatch.setattr(kernels, "per_block_shared_limit", lambda: (227 * KIB, "NVIDIA H100 80GB HBM3"))


def test_up_to_48_kib_nothing_is_set(h100):
    fn = FakeFunction()
    k = CudaKernel(SRC, "big")
    for smem in (0, 1024, 48 * KIB):
        k.launch_now((1,), (256,), (np.int32(1),), smem, function=fn)
    assert fn.sets == [] and [c[2] for c in fn.calls] == [0, 1024, 48 * KIB]


def test_above_48_kib_the_kernel_is_opted_in_once(h100):
    fn = FakeFunction()
    k = CudaKernel(SRC, "big")
    for _ in range(3):
        k.launch_now((4, 2), (256,), (np.int32(1),), 96 * KIB, function=fn)
    assert fn.sets == [96 * KIB] and fn.calls == [((4, 2), (256,), 96 * KIB)] * 3
    k.launch_now((1,), (256,), (np.int32(1),), 64 * KIB, function=fn)     # less than opted in: nothing new
    k.launch_now((1,), (256,), (np.int32(1),), 200 * KIB, function=fn)    # more: opted in again
    assert fn.sets == [96 * KIB, 200 * KIB]


def test_each_function_is_opted_in_for_itself(h100):
    """The tensor-core count launches an instrumented copy (another function) of the same kernel."""
    k = CudaKernel(SRC, "big")
    first, second = FakeFunction(), FakeFunction()
    k.launch_now((1,), (128,), (), 100 * KIB, function=first)
    k.launch_now((1,), (128,), (), 100 * KIB, function=second)
    assert first.sets == second.sets == [100 * KIB]


def test_through_the_launch_handlers_shared_mem_reaches_the_function(h100):
    from grader.cuda import launches

    k = CudaKernel(SRC, "big")
    k._function = fn = FakeFunction()     # as if compiled
    seen = []
    with launches.intercept(lambda launch: (seen.append(launch.shared_mem), launch.proceed())[1]):
        k((2,), (256,), (np.int32(3),), shared_mem=72 * KIB)
    assert seen == [72 * KIB] and fn.sets == [72 * KIB] and fn.calls == [((2,), (256,), 72 * KIB)]


def test_beyond_the_gpus_limit_the_error_names_kernel_bytes_and_limit(h100):
    fn = FakeFunction()
    k = CudaKernel(SRC, "big")
    with pytest.raises(KernelLaunchError) as info:
        k.launch_now((1,), (256,), (), 228 * KIB, function=fn)
    msg = str(info.value)
    assert "`big`" in msg and "233,472 bytes (228 KiB)" in msg and "232,448 bytes (227 KiB)" in msg
    assert "NVIDIA H100 80GB HBM3" in msg and fn.sets == [] and fn.calls == []


def test_static_shared_memory_counts_against_the_limit(h100):
    fn = FakeFunction(static=16 * KIB)
    k = CudaKernel(SRC, "big")
    with pytest.raises(KernelLaunchError, match=r"plus its 16,384 bytes of static __shared__ arrays"):
        k.launch_now((1,), (256,), (), 220 * KIB, function=fn)
    k.launch_now((1,), (256,), (), 200 * KIB, function=fn)
    assert fn.sets == [200 * KIB]


def test_a_driver_refusal_is_a_clear_launch_error(h100):
    k = CudaKernel(SRC, "big")
    with pytest.raises(KernelLaunchError, match=r"could not let `big` use 102,400 bytes .*invalid argument"):
        k.launch_now((1,), (256,), (), 100 * KIB, function=FakeFunction(refuse=True))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "96K"])
def test_shared_mem_must_be_a_byte_count(h100, bad):
    with pytest.raises(KernelLaunchError, match=rf"must be a whole number of bytes .*got {bad!r}"):
        CudaKernel(SRC, "big").launch_now((1,), (32,), (), bad, function=FakeFunction())


def test_a_numpy_integer_is_a_byte_count(h100):
    fn = FakeFunction()
    CudaKernel(SRC, "big").launch_now((1,), (32,), (), np.int64(64 * KIB), function=fn)
    assert fn.sets == [64 * KIB] and fn.calls == [((1,), (32,), 64 * KIB)] and type(fn.calls[0][2]) is int


def test_the_limit_comes_from_the_architecture_table_for_each_gpu():
    from grader.cuda import archs

    assert archs.by_name("sm_90").max_shared_per_block == 227 * KIB
    assert archs.by_name("sm_86").max_shared_per_block == 99 * KIB
    if not HAS_GPU:
        assert kernels.per_block_shared_limit() == (48 * KIB, "no GPU")


@pytest.mark.gpu
def test_gpu_a_kernel_gets_96_kib_of_dynamic_shared_memory():
    import torch

    limit, _ = kernels.per_block_shared_limit()
    if limit < 96 * KIB:
        pytest.skip(f"this GPU allows {limit} bytes a block")
    src = r'''
extern "C" __global__ void fill(float* out, int n)
{
    extern __shared__ float s[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = (float)i;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
}'''
    n = 96 * KIB // 4
    out = torch.zeros(n, device="cuda")
    CudaKernel(src, "fill")((1,), (256,), (out, np.int32(n)), shared_mem=96 * KIB)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), torch.arange(n - 1, -1, -1, dtype=torch.float32))
    with pytest.raises(KernelLaunchError, match="more than the"):
        CudaKernel(src, "fill")((1,), (256,), (out, np.int32(n)), shared_mem=limit + 1024)
