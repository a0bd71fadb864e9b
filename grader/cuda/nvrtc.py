"""Compile CUDA C to PTX and cubin through NVRTC: the one place the grader compiles CUDA C, and where
a compile error becomes a message that quotes the learner's own lines (and the released stub, a
message that says where to write the kernel).

Every path uses it: launching a learner's kernel (`CudaKernel` loads the cubin through CuPy),
compile checks without a GPU (`ladder compile`, CPU CI, the no-GPU message), chapter 4's look at
the machine code, and tensor-core counting (which instruments the PTX).

NVRTC is reached through one of two bindings, the same library either way:
- NVIDIA's `cuda-bindings` (with the `nvidia-cuda-nvrtc` wheel). It needs no GPU and no driver,
  which is what lets a CPU machine compile every shipped kernel. (`cuda.core`'s `Program` wraps the
  same calls, but version 1.2 asks the driver for its version before it returns PTX, so it cannot
  compile on a machine without a driver.)
- CuPy's own binding, on a machine with CuPy but without cuda-bindings (a plain `pip install`).
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import KernelCompileError, LadderError, NotImplementedYet
from .toolkit import include_options

# ------------------------------------------------------------------ CUDA C as the learner wrote it

# nbgrader replaces a solution region with this Python stub, even inside a CUDA C string.
_STUB_LINES = ("raise NotImplementedError", "# YOUR CODE HERE")

_LOG_LINE = re.compile(r"^(?P<file>[^\s(]*)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)[^:]*: (?P<msg>.*)$")


def is_stub(source: str) -> bool:
    return any(line.strip().startswith(_STUB_LINES) for line in source.splitlines())


def require_written(source: str, name: str, where: str | None = None) -> None:
    """Raise NotImplementedYet if the released stub is still in the kernel source."""
    if is_stub(source):
        place = f" in {where}" if where else ""
        raise NotImplementedYet(
            f"the CUDA kernel `{name}` is not written yet: replace the lines\n"
            "    # YOUR CODE HERE\n    raise NotImplementedError()\n"
            f"inside its CUDA source string{place} with the kernel's body, in CUDA C.")


def with_line_directive(source: str, name: str) -> str:
    """Prefix a #line directive so that NVRTC reports lines of the learner's string, under a
    recognisable file name, whatever else we or CuPy add."""
    return f'#line 1 "{name}.cu"\n{source}'


def locate_in_notebook(source: str) -> tuple[str, int] | None:
    """Find the notebook cell (or file) that holds this source text, via linecache, where IPython
    registers every executed cell. Returns (label, line offset of the source's first line)."""
    if not source.strip():
        return None
    for filename in reversed(list(linecache.cache)):
        entry = linecache.cache.get(filename)
        if not entry or len(entry) < 3:
            continue
        text = "".join(entry[2])
        pos = text.rfind(source)
        if pos < 0:
            continue
        offset = text.count("\n", 0, pos)
        label = "your cell" if ("ipykernel" in filename or filename.startswith("<ipython")) else filename
        return label, offset
    return None


_NEEDS_NEWER = re.compile(r"Feature '(?P<feature>[^']+)' requires \.target (?P<arch>sm_\d+)")


def needs_newer_gpu(log: str, target: str = "") -> str:
    """For a log in which the assembler refused instructions the target architecture lacks (cp.async
    below sm_80, wgmma below sm_90): a sentence that says so; else ""."""
    # "cp.async.commit_group" is part of "cp.async": name each feature by its first two words.
    found = {".".join(m["feature"].split(".")[:2]): m["arch"] for m in _NEEDS_NEWER.finditer(log)}
    if not found:
        return ""
    needed = max(found.values(), key=lambda a: int(a[3:]))
    compiled_for = re.search(r"(?:--gpu-architecture=|for ')(?:sm|compute)_(\d+)", target + " " + log)
    arch = f"sm_{compiled_for.group(1)}" if compiled_for else "this architecture"
    return (f"it uses {', '.join(sorted(found))}, which needs compute capability {needed[3]}.{needed[4:]} or newer "
            f"({needed} and later), so it cannot be compiled for {arch}, nor run on a GPU of that architecture.")


def format_compile_log(log: str, source: str, name: str, target: str = "") -> str:
    """Turn an NVRTC log into a message that quotes the learner's lines with their numbers."""
    src_lines = source.splitlines()
    where = locate_in_notebook(source)
    out = [f"the CUDA kernel `{name}` did not compile{f' ({target})' if target else ''}:"]
    newer = needs_newer_gpu(log, target)
    if newer:
        out[0] += f" {newer} The assembler's words:"
    seen = 0
    for raw in log.splitlines():
        m = _LOG_LINE.match(raw.strip())
        if not m:
            continue
        seen += 1
        line = int(m["line"])
        if where:
            label, offset = where
            loc = f"line {line + offset} of {label} (kernel line {line})"
        else:
            loc = f"kernel line {line}"
        out.append(f"  {loc}: {m['kind']}: {m['msg']}")
        for n in range(max(1, line - 1), min(len(src_lines), line + 1) + 1):
            marker = ">" if n == line else " "
            out.append(f"    {marker} {n:4d} | {src_lines[n - 1]}")
    if not seen:  # a log we could not parse: show it whole rather than lose it
        out.append(log.strip())
    return "\n".join(out)


def compile_error(log: str, source: str, name: str, target: str = "") -> KernelCompileError:
    return KernelCompileError(format_compile_log(log, source, name, target))


# ------------------------------------------------------------------------------------ compiling

DEFAULT_ARCHS = ("sm_80", "sm_90")
DEFAULT_ARCH = "sm_80"   # without a GPU: an A100, the oldest data-centre GPU with every feature used here


@dataclass(frozen=True)
class Compiled:
    name: str
    arch: str        # the real architecture of the cubin ("sm_90"), or the virtual one of PTX only
    ptx: str
    cubin: bytes     # empty when only PTX was asked for
    log: str
    binding: str     # which NVRTC binding compiled it, for reports


class _CudaBindings:
    """NVRTC through cuda-bindings (`from cuda.bindings import nvrtc`)."""

    def __init__(self):
        try:
            from cuda.bindings import nvrtc
        except ImportError:
            from cuda import nvrtc  # cuda-python before 12.6 spelled it this way
        self.nvrtc = nvrtc
        self.version = "NVRTC %d.%d (cuda-bindings)" % tuple(self._check(*nvrtc.nvrtcVersion(), what="nvrtcVersion"))

    def _check(self, err, *rest, what: str):
        if err != self.nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, msg = self.nvrtc.nvrtcGetErrorString(err)
            raise LadderError(f"{what} failed: {msg.decode() if isinstance(msg, bytes) else msg}")
        return rest[0] if len(rest) == 1 else rest

    def archs(self) -> tuple[int, ...]:
        return tuple(self._check(*self.nvrtc.nvrtcGetSupportedArchs(), what="nvrtcGetSupportedArchs"))

    def compile(self, text: str, filename: str, options: list[str], product: str) -> tuple[bytes | None, str]:
        """(product bytes, log); product None when the compile failed."""
        nvrtc = self.nvrtc
        prog = self._check(*nvrtc.nvrtcCreateProgram(text.encode(), filename.encode(), 0, [], []),
                           what="nvrtcCreateProgram")
        try:
            opts = [o.encode() for o in options]
            (compiled,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
            size = self._check(*nvrtc.nvrtcGetProgramLogSize(prog), what="nvrtcGetProgramLogSize")
            log = b" " * size
            self._check(*nvrtc.nvrtcGetProgramLog(prog, log), what="nvrtcGetProgramLog")
            log = log.decode(errors="replace").rstrip("\x00 ")
            if compiled != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                return None, log
            size = self._check(*getattr(nvrtc, f"nvrtcGet{product}Size")(prog), what=f"nvrtcGet{product}Size")
            data = b" " * size
            self._check(*getattr(nvrtc, f"nvrtcGet{product}")(prog, data), what=f"nvrtcGet{product}")
            return bytes(data), log
        finally:
            nvrtc.nvrtcDestroyProgram(prog)


class _CupyBinding:
    """NVRTC through CuPy's binding (`cupy_backends.cuda.libs.nvrtc`)."""

    def __init__(self):
        from cupy_backends.cuda.libs import nvrtc
        self.nvrtc = nvrtc
        self.version = "NVRTC %d.%d (CuPy)" % tuple(nvrtc.getVersion())

    def archs(self) -> tuple[int, ...]:
        return tuple(self.nvrtc.getSupportedArchs())

    def compile(self, text: str, filename: str, options: list[str], product: str) -> tuple[bytes | None, str]:
        nvrtc = self.nvrtc
        prog = nvrtc.createProgram(text, filename, [], [])
        try:
            try:
                nvrtc.compileProgram(prog, options)
            except nvrtc.NVRTCError:
                return None, nvrtc.getProgramLog(prog)
            data = nvrtc.getCUBIN(prog) if product == "CUBIN" else nvrtc.getPTX(prog)
            return (data if isinstance(data, bytes) else data.encode()), nvrtc.getProgramLog(prog)
        finally:
            nvrtc.destroyProgram(prog)


@lru_cache(maxsize=1)
def binding():
    """The NVRTC binding to use: cuda-bindings when installed, else CuPy's."""
    reasons = []
    for kind in (_CudaBindings, _CupyBinding):
        try:
            return kind()
        except Exception as exc:  # not installed, or no NVRTC library behind it: try the next
            reasons.append(f"{kind.__doc__.split('(')[0].strip()}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    raise LadderError("cannot compile CUDA C: no NVRTC found (" + "; ".join(reasons) + "). Install it with "
                      "`pip install 'cuda-bindings<13' nvidia-cuda-nvrtc-cu12`, or install CuPy.")


def nvrtc_available() -> tuple[bool, str]:
    try:
        return True, binding().version
    except LadderError as exc:  # report, don't crash: doctor calls this
        return False, str(exc)


def supported_archs() -> tuple[str, ...]:
    """The real architectures this NVRTC compiles for, e.g. ("sm_75", "sm_80", ...)."""
    try:
        return tuple(f"sm_{a}" for a in binding().archs())
    except Exception:  # no NVRTC, or one too old to say
        return ()


def target_arch(capability: tuple[int, int] | None, gpu_name: str = "") -> tuple[str, str]:
    """(arch, why) to compile for a GPU of this compute capability (None: no GPU).

    A cubin runs only on its own architecture (sm_80 code does not run on an sm_90 GPU), so for a GPU
    newer than this NVRTC knows, the result is a virtual architecture ("compute_90"): PTX, which the
    driver compiles for the GPU when it loads it."""
    if capability is None:
        return DEFAULT_ARCH, f"no GPU here: compiled for {DEFAULT_ARCH}, an A100"
    arch = f"sm_{capability[0]}{capability[1]}"
    supported = supported_archs()
    if not supported or arch in supported:
        return arch, f"compiled for {arch}, this GPU's architecture"
    older = [a for a in supported if int(a[3:]) <= int(arch[3:])]
    if not older:
        raise LadderError(f"this NVRTC cannot compile for {arch} ({gpu_name}) or any older architecture it knows "
                          f"({', '.join(supported)})")
    virtual = older[-1].replace("sm_", "compute_")
    return virtual, f"this NVRTC cannot compile for {arch} ({gpu_name}): PTX for {virtual}, compiled by the driver"


@lru_cache(maxsize=128)
def compile_cuda(source: str, name: str, arch: str = "sm_90", options: tuple[str, ...] = (),
                 products: tuple[str, ...] = ("cubin", "ptx")) -> Compiled:
    """Compile `source` for `arch`: the cubin for a real architecture (sm_XX) and the PTX.

    Raises NotImplementedYet on the released stub and KernelCompileError (quoting the learner's
    lines) when NVRTC rejects the code. Cached: each source is compiled once per process."""
    require_written(source, name)
    nvrtc = binding()
    text = with_line_directive(source, name)
    common = ["--std=c++17", *include_options(source), *options]
    virtual = arch.replace("sm_", "compute_")
    out = {"cubin": b"", "ptx": b""}
    log = ""
    for product in products:
        if product == "cubin" and arch.startswith("compute_"):
            continue  # PTX only: the driver compiles it
        target = arch if product == "cubin" else virtual
        flags = [f"--gpu-architecture={target}", *common]
        data, log = nvrtc.compile(text, f"{name}.cu", flags, product.upper())
        if data is None:
            raise compile_error(log, source, name, "NVRTC, " + " ".join(flags))
        out[product] = data
    return Compiled(name, arch, out["ptx"].decode(errors="replace").rstrip("\x00"), out["cubin"], log, nvrtc.version)


def compile_for_archs(source: str, name: str, archs=DEFAULT_ARCHS, options=()) -> list[Compiled]:
    return [compile_cuda(source, name, arch, tuple(options)) for arch in archs]
