"""Count the multiply-adds a CUDA kernel really performs on tensor cores.

A tensor-core instruction in a kernel's SASS proves only that the compiler emitted it: it may sit in
a branch that never runs. To know what runs, the grader launches an instrumented copy of each of
the learner's kernels in place of the original. The copy is the learner's source compiled through
NVRTC to PTX for this GPU, with one extra instruction before every tensor-core MMA (`wmma.mma`,
`mma.sync`, `wgmma.mma_async`): an atomic add, to a counter in global memory, of the multiply-adds
that MMA performs, split over the threads that execute it together. Every thread of a warp (of a
warpgroup for `wgmma`) executes the MMA, so after the launch the counter holds the multiply-adds
the tensor cores did. The driver compiles the PTX to machine code; the kernel computes the same
result as before (the grader checks that too).

Triton kernels are counted the same way: while counting, Triton compiles the learner's kernels
again with the atomic add inserted into the PTX it generates (a compiler-stage hook,
`knobs.runtime.add_stages_inspection_hook`), into a cache of their own, so the binaries used for
timing are never replaced. The counter is a device buffer whose address is written into the PTX.

A second counter adds only the MMAs on fp8 operands (`.e4m3`, `.e5m2` in the opcode): chapter 9 requires its
GEMM's products on FP8 tensor cores, which an fp16 MMA on tiles converted from fp8 is not. Without a GPU,
Triton's interpreter counts its `tl.dot` calls the same way (grader.cuda.interpreter).

`counting()` switches it on for every kernel launched in this process (a handler of
grader.cuda.launches); the grader's fact gathering does the same for one call of a learner's
launcher (`CallPolicy.count_tensor_cores`, grader.calls.facts).
"""

from __future__ import annotations

import atexit
import hashlib
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KernelLaunchError, LadderError
from . import interpreter, launches
from .nvrtc import compile_cuda
from .tally import Tally
from .toolkit import tool_paths

COUNTER = "__ladder_tc_macs"
FP8_COUNTER = "__ladder_tc_fp8_macs"   # the same, for MMAs whose operands are fp8 (chapter 9)

# One PTX instruction line: an optional guard predicate, then the opcode and its operands.
_INSTRUCTION = re.compile(r"^(?P<indent>\s*)(?P<guard>@!?%?[\w$]+\s+)?(?P<opcode>[a-z][\w.:]*)")
_SHAPE = re.compile(r"\.m(\d+)n(\d+)k(\d+)(?=\.|$)")
# Tensor-core opcodes this module cannot weigh (their shape lives in a descriptor, not the opcode).
_UNWEIGHABLE = re.compile(r"^(tcgen05\.mma|mma\.sp)")
# The operand types of an FP8 MMA: `wgmma...f32.e4m3.e4m3` (sm_90), `mma.sync...f32.e4m3.e4m3.f32` (sm_89).
_FP8_OPERAND = re.compile(r"\.(e4m3|e5m2)(?=\.|$)")


def is_fp8(opcode: str) -> bool:
    """Whether a tensor-core MMA multiplies fp8 operands (e4m3 or e5m2)."""
    return bool(_FP8_OPERAND.search(opcode))


def macs_per_thread(opcode: str) -> int | None:
    """Multiply-adds one thread's share of this tensor-core instruction stands for, or None if the
    opcode is not a tensor-core MMA.

    - `wmma.mma.sync...mMnNkK`: one warp computes an M x N x K product, M*N*K/32 per thread.
    - `mma.sync.aligned.mMnNkK`: the same, except the fp16 m8n8k4 form, in which each of the warp's
      four groups of eight threads computes its own 8 x 8 x 4 product (four times as much).
    - `wgmma.mma_async...mMnNkK`: a warpgroup of 128 threads computes M x N x K.
    """
    if opcode.startswith("wmma.mma"):
        threads, factor = 32, 1
    elif opcode.startswith("mma.sync"):
        threads, factor = 32, 1
        if ".m8n8k4." in opcode + "." and ".f64" not in opcode:
            factor = 4
    elif opcode.startswith("wgmma.mma_async"):
        threads, factor = 128, 1
    else:
        return None
    shape = _SHAPE.search(opcode)
    if shape is None:
        return None
    m, n, k = map(int, shape.groups())
    return max(1, m * n * k * factor // threads)


@dataclass
class Instrumented:
    ptx: str
    sites: int                                        # tensor-core MMAs instrumented
    unweighed: list[str] = field(default_factory=list)  # tensor-core opcodes that could not be counted


def instrument_ptx(ptx: str, address: int | None = None) -> Instrumented:
    """`ptx` with a counting atomic before every tensor-core MMA, and a second one before each MMA on fp8
    operands.

    The counters are global variables the PTX declares (`COUNTER`, `FP8_COUNTER`), or, given `address`,
    the 8 bytes of device memory at that address and the 8 after them."""
    out, sites, unweighed, declared = [], 0, [], address is not None
    for line in ptx.splitlines():
        stripped = line.strip()
        if not declared and stripped.startswith(".address_size"):
            out.append(line)
            out.append(f".visible .global .align 8 .u64 {COUNTER};")
            out.append(f".visible .global .align 8 .u64 {FP8_COUNTER};")
            declared = True
            continue
        m = _INSTRUCTION.match(line)
        if m and not stripped.startswith("//"):
            opcode = m.group("opcode")
            if _UNWEIGHABLE.match(opcode):
                unweighed.append(opcode)
            weight = macs_per_thread(opcode)
            if weight is not None:
                guard = m.group("guard") or ""
                counters = [(COUNTER, 0)] + ([(FP8_COUNTER, 8)] if is_fp8(opcode) else [])
                for name, offset in counters:
                    # A scope of its own, so the register cannot clash with the kernel's.
                    if address is None:
                        add = f"{guard}red.global.add.u64 [{name}], %ladder_w;"
                    else:
                        add = (f".reg .u64 %ladder_a; mov.u64 %ladder_a, {address + offset:#x}; "
                               f"{guard}red.global.add.u64 [%ladder_a], %ladder_w;")
                    out.append(f"{m.group('indent')}{{ .reg .u64 %ladder_w; mov.u64 %ladder_w, {weight}; {add} }}")
                sites += 1
        out.append(line)
    if not declared:
        raise LadderError("cannot instrument this PTX: it has no .address_size directive")
    return Instrumented("\n".join(out) + "\n", sites, unweighed)


def ptxas_candidates() -> list[str]:
    """ptxas executables that may be here: NVIDIA's nvcc wheel, a CUDA toolkit, PATH, Triton's own."""
    return tool_paths("ptxas")


def assemble(ptx: str, arch: str) -> tuple[bytes | None, list[str]]:
    """The cubin of `ptx` for `arch` from the first ptxas that accepts it, or None; and why each
    ptxas tried refused (a ptxas older than the PTX, typically)."""
    refusals = []
    with tempfile.TemporaryDirectory(prefix="ladder_tc_") as tmp:
        src, out = Path(tmp) / "counted.ptx", Path(tmp) / "counted.cubin"
        src.write_text(ptx)
        for ptxas in ptxas_candidates():
            try:
                run = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(out)],
                                     capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as exc:
                refusals.append(f"{ptxas}: {exc}")
                continue
            if run.returncode == 0 and out.is_file():
                return out.read_bytes(), refusals
            refusals.append(f"{ptxas}: {(run.stderr or run.stdout).strip().splitlines()[:1]}")
    return None, refusals


class _Counted:
    """The instrumented module of one CudaKernel: assembled by ptxas when one is here (no driver
    JIT, so an NVRTC newer than the driver is no problem), else compiled from PTX by the driver."""

    def __init__(self, kernel):
        import cupy

        from .gpu import gpu_info
        from .nvrtc import target_arch

        info = gpu_info()
        arch, _ = target_arch(info.capability, info.name)
        real = arch.replace("compute_", "sm_")
        compiled = compile_cuda(kernel.source, kernel.name, arch, tuple(kernel.options))
        inst = instrument_ptx(compiled.ptx)
        self.unweighed = inst.unweighed
        cubin, _ = assemble(inst.ptx, real)
        with tempfile.TemporaryDirectory(prefix="ladder_tc_") as tmp:
            path = Path(tmp) / ("counted.cubin" if cubin is not None else "counted.ptx")
            if cubin is not None:
                path.write_bytes(cubin)
            else:
                path.write_text(inst.ptx)
            self.module = cupy.RawModule(path=str(path))
            self.function = self.module.get_function(kernel.name)
            self.counter = cupy.ndarray((1,), dtype=cupy.uint64, memptr=self.module.get_global(COUNTER))
            self.fp8_counter = cupy.ndarray((1,), dtype=cupy.uint64, memptr=self.module.get_global(FP8_COUNTER))


def _counted(kernel) -> _Counted:
    """Built once per kernel, as CudaKernel compiles once."""
    if getattr(kernel, "_ladder_counted", None) is None:
        kernel._ladder_counted = _Counted(kernel)
    return kernel._ladder_counted


def launch_counted(launch: launches.Launch, tally: Tally):
    """Run `launch` as an instrumented copy and add what its tensor cores did to `tally`: a CUDA kernel
    (below) or a Triton kernel (`launch_triton_counted`). Other launches proceed as they are."""
    if launch.kind == "triton" and hasattr(launch.kernel, "device_caches"):
        return launch_triton_counted(launch.kernel, launch.run, launch.args, launch.kwargs, tally, launch.name)
    if launch.kind == "triton" and interpreter.is_interpreted(launch.kernel):
        return interpreter.launch_counted(launch, tally)
    if launch.kind != "cuda":
        return launch.proceed()
    kernel = launch.kernel
    import cupy

    kernel.compile()   # the learner's compile errors and messages, exactly as without counting
    try:
        counted = _counted(kernel)
    except Exception as exc:  # noqa: BLE001 - report, and run the original so the result still comes
        tally.uncounted[kernel.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return launch.proceed()
    if counted.unweighed:
        tally.unweighed[kernel.name] = sorted(set(counted.unweighed))
    cupy.cuda.runtime.deviceSynchronize()
    counted.counter.fill(0)
    counted.fp8_counter.fill(0)
    kernel.launch_now(launch.grid, launch.block, launch.args, launch.shared_mem, function=counted.function)
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise KernelLaunchError(f"`{kernel.name}` crashed while running (counting its tensor-core work): {exc}",
                                reason="crashed") from None
    tally.add(kernel.name, int(counted.counter.get()[0]))
    fp8 = int(counted.fp8_counter.get()[0])
    if fp8:
        tally.add_fp8(kernel.name, fp8)
    return None


# ------------------------------------------------------------------------------ Triton kernels

_TRITON = {"counter": None, "cache": None}


def _triton_counter():
    """The device counters of counted Triton launches (all MMAs, then those on fp8 operands), and Triton's
    cache directory for their binaries.

    Both live as long as the process: the counters' address is compiled into the binaries."""
    if _TRITON["counter"] is None:
        import torch

        _TRITON["counter"] = torch.zeros(2, dtype=torch.int64, device="cuda")
        _TRITON["cache"] = tempfile.mkdtemp(prefix="ladder_tc_triton_")
        atexit.register(shutil.rmtree, _TRITON["cache"], True)
    return _TRITON["counter"], _TRITON["cache"]


@contextmanager
def triton_instrumented(address: int, cache_dir: str, compiled: list):
    """Inside, Triton compiles kernels with a counting atomic (to the 8 bytes at `address`, and for fp8
    operands to the 8 after them too) before every tensor-core MMA of their PTX, and keeps them in
    `cache_dir`, apart from its usual cache.

    Each compiled kernel's Instrumented record is appended to `compiled`."""
    from triton import knobs

    tag = f"ladder-tensor-core-count-{address:#x}"
    digest = hashlib.sha256(tag.encode()).hexdigest()

    def hook(*args):
        if not args:  # newer Triton asks for a key that keeps these binaries apart in its caches
            return tag, digest
        stages = next((a for a in args if isinstance(a, dict) and "ptx" in a), None)
        if stages is None:
            return None
        make_ptx = stages["ptx"]

        def counted_ptx(src, metadata):
            inst = instrument_ptx(make_ptx(src, metadata), address=address)
            compiled.append(inst)
            return inst.ptx

        stages["ptx"] = counted_ptx
        return None

    with knobs.runtime.scope(), knobs.compilation.scope(), knobs.cache.scope():
        knobs.runtime.add_stages_inspection_hook = hook
        knobs.compilation.always_compile = True   # never a binary from the cache, which has no counter
        knobs.cache.dir = cache_dir                # and never one of these in the usual cache
        yield


def launch_triton_counted(fn, run, args, kwargs, tally: Tally, name: str):
    """Run the Triton JITFunction `fn` (its `run` is `run`) as an instrumented copy; add what its
    tensor cores did to `tally`.

    The counted binaries sit in a kernel cache of their own (swapped into `fn` for the launch), so
    the binaries the learner's launches use otherwise stay as they were. When the copy cannot be
    built, the original runs and `name` is noted in `tally.uncounted`."""
    import torch

    counter, cache_dir = _triton_counter()
    caches = getattr(fn, "_ladder_counted_caches", None)
    if caches is None:
        from collections import defaultdict
        caches = defaultdict(fn.create_binder)
    compiled: list[Instrumented] = []
    torch.cuda.synchronize()
    counter.zero_()
    original, fn.device_caches = fn.device_caches, caches
    try:
        with triton_instrumented(counter.data_ptr(), cache_dir, compiled):
            result = run(fn, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the original compiled and ran before; report, run it
        fn.device_caches = original
        tally.uncounted[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return run(fn, *args, **kwargs)
    finally:
        fn._ladder_counted_caches = caches
        fn.device_caches = original
    unweighed = sorted({op for inst in compiled for op in inst.unweighed} | set(getattr(fn, "_ladder_unweighed", ())))
    fn._ladder_unweighed = unweighed
    if unweighed:
        tally.unweighed[name] = unweighed
    try:
        torch.cuda.synchronize()
    except RuntimeError as exc:
        raise KernelLaunchError(f"`{name}` crashed while running (counting its tensor-core work): "
                                f"{str(exc).splitlines()[0]}", reason="crashed") from None
    counts = counter.tolist()
    tally.add(name, int(counts[0]))
    if counts[1]:
        tally.add_fp8(name, int(counts[1]))
    return result


@contextmanager
def counting():
    """Inside, every CudaKernel and Triton kernel launched in this process runs its instrumented
    copy; yields a Tally."""
    tally = Tally()
    with launches.intercept(lambda launch: launch_counted(launch, tally) if launch.is_kernel else launch.proceed()):
        yield tally
