"""Build and launch CUDA C kernels: compiled by NVRTC (grader.cuda.nvrtc), loaded and launched through CuPy.

`load_kernel(source, name)` returns a `CudaKernel` at once and compiles on first use, so a notebook
cell that defines a kernel never fails on a machine without a GPU, and the released stub fails
only where it is used, with a message that says where to write the kernel. Every launch goes
through grader.cuda.launches, where the grader's checks see it.

A launch may ask for more than 48 KiB of dynamic shared memory (`shared_mem=`): the kernel is then opted
in to it (CUDA's cudaFuncAttributeMaxDynamicSharedMemorySize) up to this GPU's per-block limit, as a
CUDA C++ program would do with cudaFuncSetAttribute before its launch.
"""

from __future__ import annotations

import operator
import tempfile
from pathlib import Path
from typing import Any, Sequence

from ..errors import KernelLaunchError, NoGPUError
from . import archs, launches
from .archs import KIB, STATIC_SHARED_LIMIT
from .gpu import arch_here, gpu_info, gpu_or_reason
from .nvrtc import compile_cuda, compile_for_archs, nvrtc_available, require_written, target_arch


class CudaKernel:
    """One `extern "C" __global__` function from a CUDA C source string.

    Call it like a CuPy RawKernel: `kernel(grid, block, args, shared_mem=0)`. Arguments may be torch
    tensors, CuPy arrays or NumPy scalars; tensors are handed to CuPy through DLPack, without a copy.
    """

    def __init__(self, source: str, name: str, options: Sequence[str] = (), where: str | None = None):
        if not isinstance(source, str):
            raise TypeError(f"load_kernel expects the CUDA C source as a str, got {type(source).__name__}")
        self.source = source
        self.name = name
        self.options = tuple(options)
        self.where = where
        self._function = None
        # id(function) -> (function, bytes it was opted in to): the function kept alive, so its id is not reused.
        self._shared_opted: dict[int, tuple[Any, int]] = {}

    def __repr__(self) -> str:
        state = "compiled" if self._function is not None else "not compiled yet"
        return f"<CudaKernel {self.name} ({state})>"

    @property
    def compiled(self) -> bool:
        return self._function is not None

    def compile(self):
        """Compile now and load the kernel on this GPU. Raises NotImplementedYet, NoGPUError,
        KernelCompileError or KernelLaunchError (no kernel of that name)."""
        if self._function is not None:
            return self._function
        require_written(self.source, self.name, self.where)
        ok, reason = gpu_or_reason()
        if not ok:
            raise NoGPUError(f"cannot run `{self.name}`: {reason}. {self._compile_without_gpu()}")
        import cupy

        info = gpu_info()
        arch, _ = target_arch(info.capability, info.name)
        compiled = compile_cuda(self.source, self.name, arch, self.options)
        with tempfile.TemporaryDirectory(prefix="ladder_kernel_") as tmp:
            # A cubin for this GPU; PTX, compiled by the driver, where this NVRTC does not know the GPU.
            path = Path(tmp) / ("kernel.cubin" if compiled.cubin else "kernel.ptx")
            path.write_bytes(compiled.cubin or compiled.ptx.encode())
            module = cupy.RawModule(path=str(path))
            try:
                self._function = module.get_function(self.name)
            except cupy.cuda.driver.CUDADriverError as exc:
                raise KernelLaunchError(
                    f"the CUDA source compiled, but it has no kernel named `{self.name}`: declare it as "
                    f'extern "C" __global__ void {self.name}(...) ({exc})') from None
        self._module = module  # the function lives as long as its module
        return self._function

    def _compile_without_gpu(self) -> str:
        """Without a GPU, NVRTC can still say whether the kernel compiles (compile errors raise)."""
        available, why = nvrtc_available()
        if not available:
            return f"(Could not check that it compiles either: {why}.)"
        archs = [c.arch for c in compile_for_archs(self.source, self.name, options=self.options)]
        return f"It does compile for {' and '.join(archs)} (checked with NVRTC, no GPU needed)."

    def __call__(self, grid, block, args: Sequence[Any], shared_mem: int = 0) -> None:
        return launches.dispatch(launches.Launch(
            "cuda", self.name, self, lambda: self.launch_now(grid, block, args, shared_mem), grid=grid, block=block,
            args=args, shared_mem=shared_mem))

    def launch_now(self, grid, block, args, shared_mem: int = 0, function=None) -> None:
        """Launch without the handlers: this kernel, or `function` (an instrumented copy of it) on the
        same arguments."""
        grid, block = dims(grid, "grid"), dims(block, "block")
        function = function or self.compile()
        import cupy

        shared_mem = self._opt_in_shared(function, shared_mem)
        converted = tuple(as_kernel_arg(a) for a in args)
        try:
            function(grid, block, converted, shared_mem=shared_mem)
        except cupy.cuda.driver.CUDADriverError as exc:
            threads = 1
            for b in block:
                threads *= b
            hint = " (a block holds at most 1024 threads)" if threads > 1024 else ""
            raise KernelLaunchError(
                f"launching `{self.name}` with grid={grid}, block={block} failed: {exc}{hint}") from None

    def _opt_in_shared(self, function, shared_mem) -> int:
        """Above 48 KiB of dynamic shared memory, opt `function` in to `shared_mem` bytes (once per
        function), or say clearly why this GPU cannot give them. Returns the bytes to launch with."""
        given = shared_mem
        try:
            if isinstance(shared_mem, bool):
                raise TypeError
            shared_mem = operator.index(shared_mem)   # an int, or a NumPy integer
        except TypeError:
            shared_mem = -1
        if shared_mem < 0:
            raise KernelLaunchError(f"shared_mem for `{self.name}` must be a whole number of bytes (an int, 0 or more), "
                                    f"got {given!r}")
        if shared_mem <= STATIC_SHARED_LIMIT:
            return shared_mem
        opted = self._shared_opted
        if opted.get(id(function), (None, -1))[1] >= shared_mem:
            return shared_mem
        limit, gpu = per_block_shared_limit()
        static = int(getattr(function, "shared_size_bytes", 0) or 0)
        if shared_mem + static > limit:
            also = f" plus its {static:,} bytes of static __shared__ arrays" if static else ""
            raise KernelLaunchError(
                f"`{self.name}` asks for {shared_mem:,} bytes ({shared_mem / KIB:g} KiB) of dynamic shared memory{also}, "
                f"more than the {limit:,} bytes ({limit / KIB:g} KiB) a block can have on this GPU ({gpu}): use fewer "
                "stages or a smaller tile, and compute shared_mem from the same constants as the kernel")
        try:
            function.max_dynamic_shared_size_bytes = shared_mem
        except Exception as exc:  # noqa: BLE001 - the driver's refusal, said with the figures
            raise KernelLaunchError(
                f"could not let `{self.name}` use {shared_mem:,} bytes of dynamic shared memory on {gpu} "
                f"(limit {limit:,} bytes a block): {exc}") from None
        opted[id(function)] = (function, shared_mem)
        return shared_mem


def per_block_shared_limit() -> tuple[int, str]:
    """(bytes of shared memory a block may opt in to on this GPU, the GPU's name): grader.cuda.gpu's
    figure for this GPU (the device's own where torch reports it, else its architecture's)."""
    info = gpu_info()
    if info is None:
        return archs.STATIC_SHARED_LIMIT, "no GPU"
    return arch_here().max_shared_per_block, info.name


def dims(value, what: str) -> tuple[int, ...]:
    values = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or not 1 <= len(values) <= 3 \
            or not all(isinstance(d, int) and not isinstance(d, bool) for d in values):
        raise KernelLaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    if any(d < 1 for d in values):
        raise KernelLaunchError(f"every {what} dimension must be at least 1, got {values}")
    return values


def as_kernel_arg(arg):
    import torch

    if isinstance(arg, torch.Tensor):
        if not arg.is_cuda:
            raise KernelLaunchError("a kernel argument is a CPU tensor: move it to the GPU first (.cuda())")
        import cupy
        return cupy.from_dlpack(arg)
    if isinstance(arg, bool):
        raise KernelLaunchError("pass flags to kernels as numpy.int32(0 or 1), not Python bools")
    if isinstance(arg, (int, float)):
        raise KernelLaunchError(
            f"kernel scalar argument {arg!r} is a plain Python {type(arg).__name__}: pass it with its exact "
            "C type, e.g. numpy.int64(n) for `long long n`, numpy.int32(n) for `int n`, "
            "numpy.float32(x) for `float x`")
    return arg


def load_kernel(source: str, name: str, options: Sequence[str] = (), where: str | None = None) -> CudaKernel:
    """A kernel from CUDA C source. Nothing is compiled until the first launch (or `.compile()`)."""
    return CudaKernel(source, name, options, where)


def compile_only(source: str, name: str, archs=("sm_80", "sm_90")) -> str:
    """Compile through NVRTC without a GPU; returns a one-line summary, raises on errors."""
    results = compile_for_archs(source, name, archs)
    return f"`{name}` compiles for {', '.join(r.arch for r in results)} (NVRTC, no GPU needed)"
