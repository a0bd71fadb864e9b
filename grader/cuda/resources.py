"""What a compiled kernel asks of an SM (registers per thread, shared memory, spills), read from the
report of NVIDIA's assembler, and whether a block of it can launch on an architecture.

`ptxas --verbose` prints, for every kernel it assembles, the registers each thread uses, the static
shared memory, and the bytes spilled to local memory. NVRTC runs the same assembler and passes the
report on (`--ptxas-options=--verbose`); for Triton's PTX the grader runs the ptxas Triton itself
uses. No GPU is needed for either. A launch adds what only it knows: the threads per block, and the
dynamic shared memory (all of a Triton kernel's, `metadata.shared`).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..errors import LadderError
from .archs import MAX_THREADS_PER_BLOCK, STATIC_SHARED_LIMIT, WARP, Arch

VERBOSE = "--ptxas-options=--verbose"   # NVRTC's spelling

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_SPILLS = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers(?P<rest>.*)")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")


@dataclass(frozen=True)
class Usage:
    """One kernel's resources as ptxas assembled it for `arch`."""
    name: str
    arch: str
    registers: int          # per thread
    static_shared: int      # bytes of `__shared__` arrays
    spill_bytes: int        # stores to local memory the register allocator could not avoid
    stack: int

    def describe(self) -> str:
        spills = f", {self.spill_bytes:,} bytes spilled" if self.spill_bytes else ", no spills"
        return f"{self.registers} registers a thread, {self.static_shared / 1024:g} KiB static shared memory{spills}"


def parse_report(log: str) -> dict[str, Usage]:
    """{kernel name: Usage} from ptxas's verbose report (or an NVRTC log holding one)."""
    found: dict[str, Usage] = {}
    name = arch = None
    stack = spills = 0
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            name, arch, stack, spills = m["name"], m["arch"], 0, 0
        elif (m := _SPILLS.search(line)) and name:
            stack, spills = int(m["stack"]), int(m["stores"])
        elif (m := _USED.search(line)) and name:
            smem = _SMEM.search(m["rest"])
            found[name] = Usage(name, arch, int(m["regs"]), int(smem["smem"]) if smem else 0, spills, stack)
            name = None
    return found


def _kept_report(ptx: str, gpu_name: str, ptxas: str) -> Path:
    key = hashlib.sha256("\0".join((ptx, gpu_name, ptxas, str(Path(ptxas).stat().st_mtime_ns))).encode()).hexdigest()
    return config.cache_dir() / "ptxas-reports" / f"{key}.txt"


def _keep_report(ptx: str, gpu_name: str, ptxas: str, report: str) -> None:
    """Keep ptxas's verbose report of `ptx` for the next `assemble_report` of it, written whole or not at all:
    processes side by side (a class's students, the test suite's workers) ask for the same reports."""
    cached = _kept_report(ptx, gpu_name, ptxas)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=cached.parent, delete=False, suffix=".part") as part:
            part.write(report)
        os.replace(part.name, cached)
    except OSError:  # a read-only home: assemble again next time
        pass


def assemble_report(ptx: str, gpu_name: str, ptxas: str) -> dict[str, Usage]:
    """Assemble `ptx` for `gpu_name` ("sm_86", "sm_90a") with `ptxas --verbose`; its report per kernel.

    Reports are kept in LADDER_CACHE_DIR by a hash of the PTX, the target and the assembler: a large
    kernel spilling on sm_75 takes seconds to assemble, and CI's processes ask for the same ones."""
    try:
        return parse_report(_kept_report(ptx, gpu_name, ptxas).read_text())
    except OSError:
        pass
    return parse_report(assemble(ptx, gpu_name, ptxas)[1])


def assemble(ptx: str, gpu_name: str, ptxas: str) -> tuple[bytes, str]:
    """(the object, the report) of `ptxas --verbose` on `ptx` for `gpu_name`; the report is kept for
    `assemble_report` (grader.cuda.crosscompile makes this Triton's last stage, so that a cross-compile runs
    ptxas once)."""
    with tempfile.TemporaryDirectory(prefix="ladder_ptxas_") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        proc = subprocess.run([ptxas, "--verbose", f"--gpu-name={gpu_name}", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise LadderError(f"ptxas could not assemble the PTX for {gpu_name}: {proc.stderr.strip()[:2000]}")
        binary = (Path(tmp) / "k.o").read_bytes()
    report = proc.stdout + proc.stderr
    _keep_report(ptx, gpu_name, ptxas, report)
    return binary, report


def launch_problems(usage: Usage, arch: Arch, threads: int, dynamic_shared: int = 0) -> list[str]:
    """Why a block of `threads` threads of this kernel cannot launch on `arch` (empty: it can)."""
    problems = []
    if threads > MAX_THREADS_PER_BLOCK:
        problems.append(f"{threads} threads per block, more than the {MAX_THREADS_PER_BLOCK} any GPU allows")
    if usage.registers > arch.max_registers_per_thread:
        problems.append(f"{usage.registers} registers a thread, more than {arch.name}'s {arch.max_registers_per_thread}")
    # Registers are handed out a warp at a time, in units of 256 (8 a thread).
    per_warp = -(-usage.registers * WARP // 256) * 256
    warps = -(-threads // WARP)
    if per_warp * warps > arch.registers_per_sm:
        problems.append(f"{warps} warps of {usage.registers} registers a thread need {per_warp * warps:,} registers, "
                        f"more than the {arch.registers_per_sm:,} of an SM")
    if usage.static_shared > STATIC_SHARED_LIMIT:
        problems.append(f"{usage.static_shared:,} bytes of static shared memory, more than the "
                        f"{STATIC_SHARED_LIMIT // 1024} KiB `__shared__` arrays may use")
    shared = usage.static_shared + dynamic_shared
    if shared > arch.max_shared_per_block:
        problems.append(f"{shared / 1024:g} KiB of shared memory per block, more than {arch.name}'s "
                        f"{arch.max_shared_per_block / 1024:g} KiB")
    if threads > arch.max_threads_per_sm:
        problems.append(f"{threads} threads per block, more than the {arch.max_threads_per_sm} an SM of {arch.name} holds")
    return problems
