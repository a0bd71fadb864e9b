"""Compile CUDA C to PTX and cubin through NVRTC, with no GPU and no driver.

CuPy needs a driver even to compile. NVRTC called directly (cuda-bindings plus NVIDIA's nvrtc
wheel) does not, so CPU-only CI compiles every shipped kernel here, and a learner without a GPU can
still check that a kernel compiles (`ladder compile`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LadderError
from .headers import include_options
from .source import compile_error, require_written, with_line_directive

DEFAULT_ARCHS = ("sm_80", "sm_90")


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # cuda-python < 12.6 spelled it this way
        except ImportError:
            raise LadderError("NVRTC compile-only mode needs cuda-bindings and NVIDIA's nvrtc wheel: "
                              "pip install 'cuda-bindings<13' nvidia-cuda-nvrtc-cu12") from None
    return nvrtc


def nvrtc_available() -> tuple[bool, str]:
    try:
        nvrtc = _nvrtc()
        err, major, minor = nvrtc.nvrtcVersion()
        _check(nvrtc, err, "nvrtcVersion")
        return True, f"NVRTC {major}.{minor}"
    except Exception as exc:  # report, don't crash: doctor calls this
        return False, str(exc).splitlines()[0]


def _check(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise LadderError(f"{what} failed: {msg.decode() if isinstance(msg, bytes) else msg}")


@dataclass(frozen=True)
class Compiled:
    name: str
    arch: str
    ptx: str
    cubin: bytes
    log: str


def _run(nvrtc, text: str, name: str, options: list[str], source: str):
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), f"{name}.cu".encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (compile_err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        _check(nvrtc, err, "nvrtcGetProgramLogSize")
        log = b" " * size
        (err,) = nvrtc.nvrtcGetProgramLog(prog, log)
        log = log.decode(errors="replace").rstrip("\x00 ")
        if compile_err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise compile_error(log, source, name, "NVRTC, " + " ".join(options))
        return prog, log
    except BaseException:
        nvrtc.nvrtcDestroyProgram(prog)
        raise


def _compile_and_get(nvrtc, text: str, name: str, options: list[str], source: str, what: str):
    """Compile once and fetch one product: what = "CUBIN" (needs sm_XX) or "PTX" (needs compute_XX)."""
    prog, log = _run(nvrtc, text, name, options, source)
    try:
        err, size = getattr(nvrtc, f"nvrtcGet{what}Size")(prog)
        _check(nvrtc, err, f"nvrtcGet{what}Size")
        data = b" " * size
        (err,) = getattr(nvrtc, f"nvrtcGet{what}")(prog, data)
        _check(nvrtc, err, f"nvrtcGet{what}")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return data, log


def compile_cuda(source: str, name: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> Compiled:
    """Compile `source` for one real architecture: the cubin for sm_XX and the PTX for compute_XX.

    Raises NotImplementedYet on the released stub and KernelCompileError (with the learner's lines)
    when NVRTC rejects the code.
    """
    require_written(source, name)
    nvrtc = _nvrtc()
    text = with_line_directive(source, name)
    common = ["--std=c++17", *include_options(source), *options]
    virtual = arch.replace("sm_", "compute_")

    cubin, log = _compile_and_get(nvrtc, text, name, [f"--gpu-architecture={arch}", *common], source, "CUBIN")
    ptx, _ = _compile_and_get(nvrtc, text, name, [f"--gpu-architecture={virtual}", *common], source, "PTX")
    return Compiled(name, arch, ptx.decode(errors="replace").rstrip("\x00"), bytes(cubin), log)


def compile_for_archs(source: str, name: str, archs=DEFAULT_ARCHS, options=()) -> list[Compiled]:
    return [compile_cuda(source, name, arch, tuple(options)) for arch in archs]
