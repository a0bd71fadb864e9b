"""Look at the machine code of a CUDA kernel: SASS from a disassembler, or its PTX when there is none.

NVRTC compiles CUDA C to PTX, NVIDIA's virtual instruction set, and on to a cubin of SASS, the
instructions one GPU generation really executes. Only SASS says for certain which units do the
work: a tensor-core multiply is `HMMA` (`HGMMA` for Hopper's warpgroup MMA), a plain fp32
multiply-add is `FFMA`. Chapter 4 uses this module twice: the learner disassembles a WMMA kernel and
an FMA kernel side by side, and the grader checks that the learner's GEMM really uses tensor cores.

Everything here works without a GPU. Compiling needs NVRTC (through cuda-bindings, as `grader.nvrtc`
does, or else through CuPy's own NVRTC binding); disassembling needs `cuobjdump` or `nvdisasm` from
a CUDA toolkit (PATH, CUDA_PATH, /usr/local/cuda) or from NVIDIA's pip wheels
(`nvidia-cuda-cuobjdump`, `nvidia-cuda-nvdisasm`). Without a disassembler the PTX is inspected
instead, and every report says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .errors import KernelLaunchError, LadderError
from .headers import include_options
from .nvrtc import Compiled, compile_cuda
from .source import compile_error, require_written, with_line_directive

DEFAULT_ARCH = "sm_80"   # without a GPU: an A100, the oldest data-centre GPU with every feature used here

# A SASS opcode runs on the tensor cores when its name holds "MMA": HMMA (fp16/bf16/tf32), HGMMA
# (Hopper warpgroup MMA), IMMA (int8), DMMA (fp64), BMMA (1-bit), QGMMA (fp8), and Blackwell's
# UTC*MMA. No other opcode contains those three letters.
_TENSOR_SASS = re.compile(r"MMA")
# The PTX instructions that become tensor-core SASS.
_TENSOR_PTX = re.compile(r"^(wmma\.mma|mma\.sync|wgmma\.mma_async|tcgen05\.mma)")


# ---------------------------------------------------------------------------------- compiling

def _cupy_nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        return None
    return nvrtc


def _compile_with_cupy(nvrtc, source: str, name: str, arch: str, options: tuple[str, ...]) -> tuple[str, bytes]:
    """The same two compiles as grader.nvrtc.compile_cuda, through CuPy's binding of NVRTC: a GPU
    machine with CuPy but without cuda-bindings (a plain `pip install`) can still inspect kernels."""
    text = with_line_directive(source, name)
    common = ["--std=c++17", *include_options(source), *options]
    products = []
    for target, getter in ((arch, nvrtc.getCUBIN), (arch.replace("sm_", "compute_"), nvrtc.getPTX)):
        prog = nvrtc.createProgram(text, f"{name}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(prog, [f"--gpu-architecture={target}", *common])
            except nvrtc.NVRTCError:
                raise compile_error(nvrtc.getProgramLog(prog), source, name,
                                    "NVRTC, " + " ".join([f"--gpu-architecture={target}", *common])) from None
            products.append(getter(prog))
        finally:
            nvrtc.destroyProgram(prog)
    cubin, ptx = products
    ptx = ptx.decode(errors="replace") if isinstance(ptx, bytes) else ptx
    return ptx.rstrip("\x00"), bytes(cubin)


def supported_archs() -> tuple[str, ...]:
    """The real architectures this NVRTC can compile for, e.g. ("sm_75", "sm_80", ...)."""
    try:
        from .nvrtc import _nvrtc
        nvrtc = _nvrtc()
        err, archs = nvrtc.nvrtcGetSupportedArchs()
        if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return tuple(f"sm_{a}" for a in archs)
    except Exception:  # no cuda-bindings, or an NVRTC too old to say: ask CuPy's
        pass
    cupy_nvrtc = _cupy_nvrtc()
    if cupy_nvrtc is not None:
        try:
            return tuple(f"sm_{a}" for a in cupy_nvrtc.getSupportedArchs())
        except Exception:
            pass
    return ()


def compiler() -> tuple[str, object | None]:
    """(description, CuPy's NVRTC module or None): NVRTC through cuda-bindings when it is there, as
    grader.nvrtc does, else through CuPy's own binding (a GPU machine with a plain `pip install`)."""
    from .nvrtc import nvrtc_available

    ok, version = nvrtc_available()
    if ok:
        return f"{version} (cuda-bindings)", None
    cupy_nvrtc = _cupy_nvrtc()
    if cupy_nvrtc is None:
        raise LadderError(f"cannot compile kernels to look at their instructions: {version}, and CuPy is not "
                          "installed either. Install cuda-bindings and nvidia-cuda-nvrtc-cu12, or CuPy.")
    major, minor = cupy_nvrtc.getVersion()
    return f"NVRTC {major}.{minor} (CuPy)", cupy_nvrtc


@lru_cache(maxsize=64)
def compile_kernel(source: str, name: str, arch: str, options: tuple[str, ...] = ()) -> Compiled:
    """PTX and cubin of `source` for one architecture, through NVRTC, with no GPU needed.

    Raises NotImplementedYet on the released stub and KernelCompileError quoting the learner's lines.
    """
    require_written(source, name)
    _, cupy_nvrtc = compiler()
    if cupy_nvrtc is None:
        return compile_cuda(source, name, arch, options)
    ptx, cubin = _compile_with_cupy(cupy_nvrtc, source, name, arch, options)
    return Compiled(name, arch, ptx, cubin, log="")


def target_arch() -> tuple[str, str]:
    """(arch, why): this GPU's architecture when there is a GPU and NVRTC knows it, else sm_80."""
    from .device import gpu_info

    info = gpu_info()
    supported = supported_archs()
    if info is None:
        return DEFAULT_ARCH, f"no GPU here: compiled for {DEFAULT_ARCH}, an A100"
    arch = f"sm_{info.capability[0]}{info.capability[1]}"
    if supported and arch not in supported:
        older = [a for a in supported if int(a[3:]) <= int(arch[3:])]
        fallback = older[-1] if older else DEFAULT_ARCH
        return fallback, f"this NVRTC cannot compile for {arch} ({info.name}): compiled for {fallback}"
    return arch, f"compiled for {arch}, this GPU's architecture"


# ------------------------------------------------------------------------------ disassembling

def _tool_dirs() -> list[Path]:
    """Folders that may hold cuobjdump or nvdisasm, most specific first."""
    from .headers import _site_dirs

    dirs: list[Path] = []
    for var in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "bin")
    for d in _site_dirs():
        nvidia = d / "nvidia"
        if nvidia.is_dir():
            dirs.extend(sorted(p / "bin" for p in nvidia.iterdir() if (p / "bin").is_dir()))
    dirs.append(Path("/usr/local/cuda/bin"))
    return dirs


@lru_cache(maxsize=1)
def find_disassembler() -> tuple[str, str] | None:
    """(kind, path) of the first cuobjdump or nvdisasm found, or None. `LADDER_NO_DISASSEMBLER=1`
    hides them all (tests use it to exercise the PTX fallback)."""
    if os.environ.get("LADDER_NO_DISASSEMBLER"):
        return None
    for tool in ("cuobjdump", "nvdisasm"):
        found = tool_paths(tool)
        if found:
            return tool, found[0]
    return None


def tool_paths(tool: str) -> list[str]:
    """Every executable named `tool` on PATH or in `_tool_dirs()`, in that order, each file once."""
    found, seen = [], set()
    on_path = shutil.which(tool)
    for p in ([Path(on_path)] if on_path else []) + [d / tool for d in _tool_dirs()]:
        if p.is_file() and os.access(p, os.X_OK) and p.resolve() not in seen:
            seen.add(p.resolve())
            found.append(str(p))
    return found


def _run_disassembler(kind: str, path: str, cubin: bytes) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "kernel.cubin"
        f.write_bytes(cubin)
        args = [path, "-sass", str(f)] if kind == "cuobjdump" else [path, "-c", str(f)]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not proc.stdout.strip():
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(said[-1] if said else f"{kind} exited with status {proc.returncode}")
    return proc.stdout


_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.+?)\s*;")
_FUNCTION = re.compile(r"^\s*(?:Function : (\S+)|\.text\.(\S+?):)\s*$")


def parse_sass(text: str) -> dict[str, list[str]]:
    """{function name: [instructions]} from `cuobjdump -sass` or `nvdisasm -c` output."""
    functions: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = m.group(1) or m.group(2)
            functions.setdefault(current, [])
            continue
        m = _SASS_LINE.search(line)
        if m and current is not None:
            functions[current].append(f"/*{m.group(1)}*/ {m.group(2)}")
    return functions


# ------------------------------------------------------------------------------------- PTX

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)


def _ptx_functions(ptx: str) -> dict[str, tuple[str, str]]:
    """{name: (kind, body)} for every .entry and .func of a PTX module."""
    marks = list(_ENTRY.finditer(ptx))
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(ptx)
        out[m.group(2)] = (m.group(1), ptx[m.start():end])
    return out


def ptx_of(ptx: str, name: str) -> tuple[str, list[str]]:
    """The PTX of kernel `name` and every .func it calls, and the names of those functions."""
    functions = _ptx_functions(ptx)
    if name not in functions or functions[name][0] != "entry":
        entries = sorted(n for n, (kind, _) in functions.items() if kind == "entry")
        raise KernelLaunchError(f"the CUDA source compiled, but it has no kernel named `{name}` "
                          f"(kernels found: {', '.join(entries) or 'none'}); declare it as "
                          f'extern "C" __global__ void {name}(...)')
    seen, todo = [name], [name]
    while todo:
        body = functions[todo.pop()][1]
        for callee in re.findall(r"\bcall(?:\.uni)?\s+(?:\([^)]*\),\s*)?([\w$]+)", body):
            if callee in functions and callee not in seen:
                seen.append(callee)
                todo.append(callee)
    return "".join(functions[n][1] for n in seen), seen[1:]


def ptx_instructions(ptx: str) -> list[str]:
    out = []
    for line in ptx.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$", "(", ")")) or s.endswith(":"):
            continue
        s = re.sub(r"^@!?%\w+\s+", "", s)   # a predicate guard
        out.append(s.rstrip(";"))
    return out


# ------------------------------------------------------------------------------------ listing

def _opcode(instruction: str, level: str) -> str:
    text = re.sub(r"^/\*[0-9a-f]+\*/\s*", "", instruction)
    text = re.sub(r"^@!?U?P\w+\s+", "", text) if level == "SASS" else text
    return text.split()[0] if text.split() else ""


@dataclass(frozen=True)
class Listing:
    """One kernel's instructions: SASS when a disassembler was found, else its PTX."""
    name: str
    arch: str
    ptx: str                      # the kernel's PTX: its .entry and the .func it calls
    sass: tuple[str, ...] | None  # its SASS instructions, or None
    tool: str | None              # what produced the SASS
    note: str                     # how it was compiled, and why there is no SASS if there is none
    compiler: str

    @property
    def level(self) -> str:
        return "SASS" if self.sass is not None else "PTX"

    @property
    def instructions(self) -> list[str]:
        return list(self.sass) if self.sass is not None else ptx_instructions(self.ptx)

    def opcodes(self) -> Counter:
        """How many times each opcode appears, modifiers included (`HMMA.16816.F32`, `fma.rn.f32`)."""
        return Counter(_opcode(i, self.level) for i in self.instructions)

    def tensor_core_instructions(self) -> Counter:
        if self.level == "SASS":
            return Counter({op: n for op, n in self.opcodes().items() if _TENSOR_SASS.search(op.split(".")[0])})
        return Counter({op: n for op, n in self.opcodes().items() if _TENSOR_PTX.match(op)})

    def count(self, prefix: str) -> int:
        """Instructions whose opcode starts with `prefix` ("HMMA", "FFMA", "LDG", "wmma.mma", ...)."""
        return sum(n for op, n in self.opcodes().items() if op.startswith(prefix))

    def grep(self, *words: str, limit: int = 8, width: int = 110) -> str:
        """The first `limit` instructions whose opcode starts with one of `words`, and how many more.
        Lines longer than `width` characters are cut (PTX operand lists run long)."""
        hits = [i for i in self.instructions if _opcode(i, self.level).startswith(words)]
        shown = "\n".join(f"    {h if len(h) <= width else h[:width - 3] + '...'}" for h in hits[:limit])
        more = f"\n    ... and {len(hits) - limit} more" if len(hits) > limit else ""
        return shown + more if hits else f"    (no {' / '.join(words)} instructions)"

    def summary(self, top: int = 8) -> str:
        ops = self.opcodes()
        common = ", ".join(f"{op} x{n}" for op, n in ops.most_common(top))
        tc = sum(self.tensor_core_instructions().values())
        return (f"`{self.name}`: {len(self.instructions)} {self.level} instructions for {self.arch}, "
                f"{tc} on tensor cores. Most common: {common}")


def disassemble(kernel=None, name: str | None = None, *, source: str | None = None, arch: str | None = None,
                options: Sequence[str] = ()) -> Listing:
    """Compile a kernel through NVRTC and list its SASS (or PTX, without a disassembler).

    `kernel` is a `CudaKernel` (from `load_kernel`), or pass `source=` and `name=`. `arch` defaults
    to this GPU's architecture, or sm_80 without a GPU.
    """
    if kernel is not None:
        source, name, options = kernel.source, kernel.name, tuple(getattr(kernel, "options", ()))
    if source is None or name is None:
        raise TypeError("disassemble needs a CudaKernel, or source= and name=")
    why = ""
    if arch is None:
        arch, why = target_arch()
    compiled = compile_kernel(source, name, arch, tuple(options))
    used = compiler()[0]
    ptx, _ = ptx_of(compiled.ptx, name)
    tool = find_disassembler()
    if tool is None:
        return Listing(name, arch, ptx, None, None,
                       _join(why, "no disassembler found (cuobjdump or nvdisasm), so this is the PTX, not the "
                                  "SASS; to see the SASS, `pip install nvidia-cuda-nvdisasm` or put a CUDA "
                                  "toolkit's bin/ on PATH"), used)
    kind, path = tool
    try:
        functions = parse_sass(_run_disassembler(kind, path, compiled.cubin))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return Listing(name, arch, ptx, None, None,
                       _join(why, f"{kind} could not disassemble the {arch} cubin ({exc}), so this is the PTX"),
                       used)
    entries = {n for n, (k, _) in _ptx_functions(compiled.ptx).items() if k == "entry"}
    # The kernel's own code, plus device functions the compiler kept out of line (never other kernels).
    own = [i for fn, body in functions.items() if fn == name or fn not in entries for i in body]
    return Listing(name, arch, ptx, tuple(own), f"{kind} ({path})", _join(why, f"disassembled with {kind}"),
                   used)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


# -------------------------------------------------------------------- which kernels a launcher runs

@contextmanager
def recorded_launches():
    """Inside the block, launching a `CudaKernel` records it instead of running it; yields the list.

    The grader uses it to find the kernels a learner's launcher really launches, so that the
    tensor-core check inspects those and not a kernel that merely sits in the notebook.
    """
    from .kernels import CudaKernel

    launched: list = []
    original = CudaKernel.__call__

    def record(self, grid, block, args, shared_mem: int = 0):
        if all(k is not self for k in launched):
            launched.append(self)

    CudaKernel.__call__ = record
    try:
        yield launched
    finally:
        CudaKernel.__call__ = original

