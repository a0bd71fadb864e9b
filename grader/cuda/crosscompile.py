"""Compile Triton kernels for a GPU that is not here, as a launch on that GPU would compile them.

Triton compiles for a named target (`GPUTarget("cuda", 86, 32)`) on any machine, GPU or not. What a
launch adds is the specialisation: which arguments are 16-byte aligned or divisible by 16, which
integers are 1, the constexprs, `num_warps` and `num_stages`. So a kernel is compiled from a recorded
launch: the launcher is called once with every Triton launch intercepted and recorded, never run
(grader.cuda.launches), and each recorded launch is compiled for the target through Triton's own
binder, the code that specialises a real launch. An autotuned launch is compiled once per
configuration the autotuner was given.

The binder and `_pack_args` are internals of Triton's JIT (the same in Triton 3.6 and 3.9); the
versions the course is tested with are pinned in pyproject.toml.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from ..errors import LadderError
from . import launches
from .archs import Arch
from .autotune import configured_args
from .resources import Usage, assemble, assemble_report, launch_problems

TENSOR_CORE_OPS = ("wgmma.mma_async", "mma.sync")   # what tl.dot becomes on tensor cores, Hopper first


@dataclass(frozen=True)
class RecordedLaunch:
    """A Triton launch as a launcher made it: the kernel (a JITFunction), its arguments, and the
    configurations to compile it with (one; or each of an autotuner's)."""
    name: str
    kernel: Any
    args: tuple
    kwargs: dict
    configs: tuple = ()          # triton.Config objects of an autotuned launch

    def variants(self) -> list[tuple[str, tuple, dict]]:
        """(label, arguments, keyword arguments) of every compile this launch stands for; a configuration's
        arguments are those its pre_hook makes (grader.cuda.autotune.configured_args)."""
        if not self.configs:
            return [(describe_options(self.kwargs), tuple(self.args), dict(self.kwargs))]
        return [(describe_options(c.all_kwargs()), configured_args(c, self.kernel.arg_names, self.args, self.kwargs),
                 {**self.kwargs, **c.all_kwargs()}) for c in self.configs]


@dataclass(frozen=True)
class TritonBuild:
    """One kernel compiled for one architecture."""
    name: str
    arch: str
    variant: str                 # "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8, 8 warps, 3 stages"
    num_warps: int
    shared: int                  # bytes of dynamic shared memory a launch asks for (metadata.shared)
    usage: Usage
    ptx: str = field(repr=False)

    @property
    def threads(self) -> int:
        return 32 * self.num_warps

    def tensor_core_ops(self) -> dict[str, int]:
        return {op: self.ptx.count(op) for op in TENSOR_CORE_OPS if op in self.ptx}

    def fma_count(self) -> int:
        return self.ptx.count("fma.rn.f32")

    def problems(self, arch: Arch) -> list[str]:
        return launch_problems(self.usage, arch, self.threads, self.shared)


def pipeline_buffers(config, arch: Arch) -> int:
    """How many K chunks of A and B Triton keeps in shared memory for a tl.dot kernel's `config` on `arch`.

    Read from the compiler, not assumed: Triton 3.6 and 3.9 compile a `num_stages` = s pipeline to
    s - 1 buffers where tl.dot becomes mma.sync (sm_80 to sm_89) and to s where it becomes Hopper's
    wgmma (sm_90, for tiles of at least 64 rows: chapter 5's worked 32 x 32 kernel stays on mma.sync there,
    with s - 1). `compiled.metadata.shared` of every configuration of chapter 5's solution on every
    architecture: tests/cuda/test_cross_arch.py; of chapter 9's on sm_89 and sm_90: tests/chapters/test_ch09.py.
    Architectures the course does not check get s."""
    return config.num_stages if arch.capability >= (9, 0) else max(1, config.num_stages - 1)


def describe_options(kwargs: dict) -> str:
    consts = " ".join(f"{k}={v}" for k, v in kwargs.items()
                      if k not in ("num_warps", "num_stages", "num_ctas", "maxnreg") and isinstance(v, (int, bool)))
    launch = ", ".join(f"{kwargs[k]} {what}" for k, what in (("num_warps", "warps"), ("num_stages", "stages"))
                       if k in kwargs)
    return ", ".join(p for p in (consts, launch) if p)


def specialisation_key(args: tuple, kwargs: dict) -> tuple:
    """What Triton specialises a launch on, of these arguments: a tensor's dtype and 16-byte alignment,
    an integer's being 1 or a multiple of 16, every other value as it is (constexprs, options)."""
    def one(value):
        if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            return ("tensor", str(value.dtype), value.data_ptr() % 16 == 0)
        if isinstance(value, bool) or not isinstance(value, int):
            return ("value", repr(value)) if isinstance(value, (bool, str)) else ("value", type(value).__name__)
        return ("int", value == 1, value % 16 == 0)
    return tuple(one(a) for a in args) + tuple((k, repr(v)) for k, v in sorted(kwargs.items()))


# ---------------------------------------------------------------------------------- recording

@contextlib.contextmanager
def recording():
    """Inside the block, every Triton launch (autotuned or not) is recorded instead of run; the list
    of RecordedLaunch fills as launches happen. CUDA C launches are recorded nowhere and skipped."""
    from triton.runtime.jit import JITFunction

    recorded: list[RecordedLaunch] = []

    def handler(launch: launches.Launch):
        kwargs = {k: v for k, v in launch.kwargs.items() if k not in ("grid", "warmup")}
        if launch.kind == "autotune":
            tuner = launch.kernel
            fn = tuner.fn
            while not isinstance(fn, JITFunction):   # a Heuristics inside the autotuner
                fn = fn.fn
            recorded.append(RecordedLaunch(launches.triton_name(fn), fn, tuple(launch.args), kwargs,
                                           tuple(tuner.configs)))
            return None
        if launch.kind == "triton" and isinstance(launch.kernel, JITFunction):
            recorded.append(RecordedLaunch(launch.name, launch.kernel, tuple(launch.args), kwargs))
        return None

    with launches.intercept(handler):
        yield recorded


def record(call: Callable[[], Any]) -> list[RecordedLaunch]:
    """The Triton launches `call()` makes, recorded, none run."""
    with recording() as recorded:
        call()
    return recorded


# ---------------------------------------------------------------------------------- compiling

@contextlib.contextmanager
def quiet_triton():
    """Triton's compiler warns on stderr (e.g. about TRITON_DEFAULT_FP_FUSION in 3.9), and a graded
    cell must keep stderr clean; the interpreter must be off to compile anything."""
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved


def gpu_target(arch: Arch):
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", arch.number, 32)


def _import_gluon() -> None:
    """Import Triton's Gluon package (newer Tritons import it on a kernel's first bind) as the process's
    triton.language was made. Gluon wraps triton.language's standard functions and asserts they are JIT
    functions unless the interpreter is on; in a process that imported Triton under the interpreter (a
    notebook's `start()` without a GPU) they are interpreted functions, and a cross-compile, which turns
    the interpreter off, would fail that assertion on import."""
    import sys

    if "triton.experimental.gluon" in sys.modules:
        return
    try:
        import triton.language.standard as standard
        from triton import knobs
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return
    with knobs.runtime.scope():
        knobs.runtime.interpret = isinstance(getattr(standard, "cdiv", None), InterpretedFunction)
        try:
            import triton.experimental.gluon  # noqa: F401
        except ImportError:
            pass


def compile_kernel(fn, args: tuple, kwargs: dict, arch: Arch):
    """Triton's CompiledKernel for `fn(*args, **kwargs)` on `arch`, specialised as a launch would be."""
    import triton
    from triton.compiler import ASTSource, make_backend

    try:
        from triton.runtime.jit import create_function_from_signature
    except ImportError as exc:
        raise LadderError(f"this Triton ({triton.__version__}) has no binder the course knows "
                          f"(triton.runtime.jit.create_function_from_signature): {exc}") from None
    target = gpu_target(arch)
    backend = make_backend(target)
    _import_gluon()
    with quiet_triton(), _assembled_by_report(arch):
        binder = create_function_from_signature(fn.signature, fn.params, backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
        return triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)


# What a cross-compile's cache entries are told apart by: their cubins are `ptxas --verbose`'s without Triton's
# own options, never to be loaded by a launch that finds them in Triton's cache.
CROSS_STAGES_KEY = "ladder-cross-compile-ptxas-report"


@contextlib.contextmanager
def _assembled_by_report(arch: Arch):
    """Triton's last stage (ptxas on the PTX) replaced by the assembly whose report `build` reads
    (grader.cuda.resources.assemble): ptxas runs once a variant, not twice, a third of a cold cross-compile's time.
    Where this Triton has no hook for its stages, both run."""
    from triton import knobs

    runtime = knobs.runtime
    if not hasattr(runtime, "add_stages_inspection_hook"):
        yield
        return
    ptxas, gpu_name = _ptxas_for(arch.number)

    def hook(*args):
        if not args:   # Triton asks for a key and a hash to tell these compiles' cache entries apart
            return CROSS_STAGES_KEY, hashlib.sha256(CROSS_STAGES_KEY.encode()).hexdigest()
        _backend, stages, *_ = args
        if "cubin" in stages:
            stages["cubin"] = lambda ptx, metadata: assemble(ptx, gpu_name, ptxas)[0]
        return None

    before = runtime.add_stages_inspection_hook
    runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        runtime.add_stages_inspection_hook = before


@lru_cache(maxsize=None)
def _ptxas_for(number: int) -> tuple[str, str]:
    """(ptxas path, its --gpu-name) that Triton itself uses for this architecture."""
    from triton.backends.nvidia import compiler

    return compiler.get_ptxas(number).path, compiler.sm_arch_from_capability(number)


def build(launch: RecordedLaunch, arch: Arch) -> list[TritonBuild]:
    """Every variant of a recorded launch compiled for `arch`, with what ptxas reports of each."""
    out = []
    for label, args, kwargs in launch.variants():
        compiled = compile_kernel(launch.kernel, args, kwargs, arch)
        ptx = compiled.asm["ptx"]
        ptxas, gpu_name = _ptxas_for(arch.number)
        meta = compiled.metadata
        report = assemble_report(ptx, gpu_name, ptxas)
        usage = report.get(meta.name) or next(iter(report.values()))
        out.append(TritonBuild(launch.name, arch.name, label, int(meta.num_warps), int(meta.shared), usage, ptx))
    return out
