"""The GPU architectures the course names, and the limits of each: the one table every check, the
doctor and the chapters' text draw on.

Figures are from NVIDIA's CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability" (shared memory per block is the opt-in maximum a kernel gets by asking for it; without
asking, a block gets 48 KiB on every one of them). On a GPU, grader.cuda.gpu.arch_here() reads the
device's own figures where torch reports them, so a part whose limits differ from its family's is
measured, not assumed.

What a compiler does with an architecture (tensor cores for `tl.dot`, cp.async) is not in this
table: grader.cuda.capabilities finds it by compiling for it.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from dataclasses import dataclass, replace

KIB = 1024
REGISTERS_PER_SM = 64 * 1024        # 32-bit registers, on every architecture below
MAX_REGISTERS_PER_THREAD = 255
MAX_THREADS_PER_BLOCK = 1024
STATIC_SHARED_LIMIT = 48 * KIB      # what a block gets without opting in (and all `__shared__` arrays may use)
WARP = 32


@dataclass(frozen=True)
class Arch:
    name: str                   # "sm_86"
    family: str                 # "Ampere (GA10x)"
    examples: str               # GPUs of this architecture learners have
    max_threads_per_sm: int
    max_shared_per_block: int   # bytes, opt-in maximum
    registers_per_sm: int = REGISTERS_PER_SM
    max_registers_per_thread: int = MAX_REGISTERS_PER_THREAD
    # For occupancy (chapter 7): resident blocks per SM at most, the shared memory an SM can give its
    # blocks (the largest carveout), and what the CUDA runtime keeps back per block from compute
    # capability 8.0 on (1 KiB).
    max_blocks_per_sm: int = 32
    shared_per_sm: int = 228 * KIB
    reserved_shared_per_block: int = 1 * KIB
    # The register file is split among the SM's sub-partitions (one per warp scheduler), and a warp takes
    # its registers from one of them: 4 on every architecture above 6.0 (CUDA's cuda_occupancy.h,
    # cudaOccSubPartitionsPerMultiprocessor and cudaOccMaxBlocksPerSMRegsLimit).
    sub_partitions: int = 4

    @property
    def capability(self) -> tuple[int, int]:
        digits = self.name.removeprefix("sm_")
        return int(digits[:-1]), int(digits[-1])

    @property
    def cc(self) -> str:
        return "%d.%d" % self.capability

    @property
    def number(self) -> int:
        """75 for sm_75: what Triton's GPUTarget and NVRTC's options take."""
        major, minor = self.capability
        return 10 * major + minor

    def describe(self) -> str:
        return f"{self.name} ({self.family}: {self.examples})"

    def limits(self) -> str:
        return (f"{self.max_threads_per_sm:,} threads per SM, {self.max_shared_per_block / KIB:g} KiB of shared memory "
                f"per block, {self.registers_per_sm // 1024}K 32-bit registers per SM and at most "
                f"{self.max_registers_per_thread} per thread")


# The architectures the course is checked for, oldest first (Colab's free T4 is a Turing GPU).
ARCHS: tuple[Arch, ...] = (
    Arch("sm_75", "Turing", "T4, RTX 20 series, Quadro RTX", max_threads_per_sm=1024, max_shared_per_block=64 * KIB,
         max_blocks_per_sm=16, shared_per_sm=64 * KIB, reserved_shared_per_block=0),
    Arch("sm_80", "Ampere (GA100)", "A100, A30", max_threads_per_sm=2048, max_shared_per_block=163 * KIB,
         max_blocks_per_sm=32, shared_per_sm=164 * KIB),
    Arch("sm_86", "Ampere (GA10x)", "RTX 30 series, A10, A40, RTX A6000", max_threads_per_sm=1536,
         max_shared_per_block=99 * KIB, max_blocks_per_sm=16, shared_per_sm=100 * KIB),
    Arch("sm_89", "Ada Lovelace", "RTX 40 series, L4, L40S", max_threads_per_sm=1536, max_shared_per_block=99 * KIB,
         max_blocks_per_sm=24, shared_per_sm=100 * KIB),
    Arch("sm_90", "Hopper", "H100, H200, GH200", max_threads_per_sm=2048, max_shared_per_block=227 * KIB,
         max_blocks_per_sm=32, shared_per_sm=228 * KIB),
)
NAMES = tuple(a.name for a in ARCHS)


def by_name(name: str) -> Arch:
    """The table's entry for "sm_86" (or "8.6", "86"); an unknown one raises ValueError naming the known."""
    key = name.strip().lower()
    if re.fullmatch(r"\d\.\d", key):
        key = "sm_" + key.replace(".", "")
    elif re.fullmatch(r"\d\d", key):
        key = "sm_" + key
    key = key.removesuffix("a")
    for arch in ARCHS:
        if arch.name == key:
            return arch
    raise ValueError(f"unknown architecture {name!r}: the course knows {', '.join(NAMES)}")


def name_of(capability: tuple[int, int]) -> str:
    return f"sm_{capability[0]}{capability[1]}"


def of_capability(capability: tuple[int, int], gpu_name: str = "") -> Arch:
    """The table's entry for a compute capability. A GPU the table does not know gets the limits of the
    nearest older entry, named for what it is: a placeholder until the device reports its own
    (grader.cuda.gpu.arch_here), since a newer part can have less (sm_120 has 99 KiB per block)."""
    name = name_of(capability)
    for arch in ARCHS:
        if arch.name == name:
            return arch
    older = [a for a in ARCHS if a.capability <= tuple(capability)] or [ARCHS[0]]
    return replace(older[-1], name=name, family=f"not in the course's table; limits of {older[-1].name} assumed",
                   examples=gpu_name or "unknown")


# ------------------------------------------------------------------------- which architecture is "here"

_TARGET: contextvars.ContextVar[Arch | None] = contextvars.ContextVar("ladder_arch_target", default=None)


@contextlib.contextmanager
def targeting(arch: Arch):
    """Inside the block, grader.cuda.gpu.arch_here() is `arch`: code written for "this GPU" (chapter 5's
    choice of configurations, the bars) is compiled for another architecture, on any machine."""
    token = _TARGET.set(arch)
    try:
        yield arch
    finally:
        _TARGET.reset(token)


def target() -> Arch | None:
    """The architecture `targeting` set, or None."""
    return _TARGET.get()
