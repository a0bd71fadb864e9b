"""Look at the machine code of a CUDA kernel: SASS from a disassembler, or its PTX when there is none.

NVRTC compiles CUDA C to PTX, NVIDIA's virtual instruction set, and on to a cubin of SASS, the
instructions one GPU generation really executes. Only SASS says for certain which units do the
work: a tensor-core multiply is `HMMA` (`HGMMA` for Hopper's warpgroup MMA), a plain fp32
multiply-add is `FFMA`. Chapter 4 uses this module twice: the learner disassembles a WMMA kernel and
an FMA kernel side by side, and the grader checks that the learner's GEMM really uses tensor cores.

Everything here works without a GPU. Compiling goes through grader.cuda.nvrtc; disassembling needs
`cuobjdump` or `nvdisasm` (found by grader.cuda.toolkit: NVIDIA's pip wheels such as
`nvidia-cuda-nvdisasm`, a CUDA toolkit, PATH). Without a disassembler the PTX is inspected instead,
and every report says so.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .. import config
from ..errors import KernelLaunchError
from . import launches
from .nvrtc import compile_cuda, target_arch as _target_arch
from .toolkit import tool_paths

# A SASS opcode runs on the tensor cores when its name holds "MMA": HMMA (fp16/bf16/tf32), HGMMA
# (Hopper warpgroup MMA), IMMA (int8), DMMA (fp64), BMMA (1-bit), QGMMA (fp8), and Blackwell's
# UTC*MMA. No other opcode contains those three letters.
_TENSOR_SASS = re.compile(r"MMA")
# The PTX instructions that become tensor-core SASS.
_TENSOR_PTX = re.compile(r"^(wmma\.mma|mma\.sync|wgmma\.mma_async|tcgen05\.mma)")


def target_arch() -> tuple[str, str]:
    """(arch, why): this GPU's architecture when there is a GPU and NVRTC knows it, else sm_80."""
    from .gpu import gpu_info

    info = gpu_info()
    return _target_arch(info.capability if info else None, info.name if info else "")


# ------------------------------------------------------------------------------ disassembling

@lru_cache(maxsize=1)
def find_disassembler() -> tuple[str, str] | None:
    """(kind, path) of the first cuobjdump or nvdisasm found, or None. `LADDER_NO_DISASSEMBLER=1`
    hides them all (tests use it to exercise the PTX fallback)."""
    if config.hide_disassemblers():
        return None
    for tool in ("cuobjdump", "nvdisasm"):
        found = tool_paths(tool)
        if found:
            return tool, found[0]
    return None


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
    compiled = compile_cuda(source, name, arch, tuple(options))
    used = compiled.binding
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
    launched: list = []

    def record(launch: launches.Launch):
        if launch.kind != "cuda":
            return launch.proceed()
        if all(k is not launch.kernel for k in launched):
            launched.append(launch.kernel)
        return None

    with launches.intercept(record):
        yield launched
