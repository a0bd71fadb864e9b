"""Which kernels that ran inside a learner's call were not the learner's: the data behind the
`library-compute` rule (grader.calls.rules).

A kernel is the learner's when the launch hooks (grader.cuda.launches) saw the learner's code launch
it, by name, at least as many times as the device trace (grader.cuda.trace) saw it run: CUDA C
compiled through `load_kernel`, or a Triton function defined outside installed packages (the
learner's cells or files). Besides those, a launcher may allocate, view and fill: memsets, copies and
the short list of fill and copy kernels below run in every honest launcher that calls `torch.zeros`,
`out.fill_`, `.contiguous()` or CuPy's `astype`, and Triton's autotuner clears the L2 cache with a fill
between trials. None of them computes anything but a copy of values it was given.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only names for annotations: the rules need no tracing machinery
    from ..cuda.trace import DeviceOp, DeviceTrace

# (pattern on the kernel's name, what it is): fills and copies only.
ALLOWED_KERNELS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"at::native::.*FillFunctor"), "torch fill: zeros, full, fill_, zero_"),
    (re.compile(r"at::native::.*direct_copy_kernel"), "torch copy: copy_, clone, contiguous, to"),
    (re.compile(r"arange_cuda_out"), "torch.arange"),
    (re.compile(r"^cupy_copy__"), "CuPy copy: copy, astype, copyto"),
    (re.compile(r"^cupy_fill"), "CuPy fill"),
)

# (pattern, library): to name a foreign kernel's origin in the message. The first match wins.
_LIBRARIES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^triton_(poi|red|per|tem|tma|mm|bmm|fused)_|^triton_"), "torch.compile (Inductor) Triton"),
    (re.compile(r"flash|fmha|attention|sdpa", re.I), "torch attention (SDPA)"),
    (re.compile(r"cudnn", re.I), "cuDNN"),
    (re.compile(r"cutensor", re.I), "cuTENSOR"),
    (re.compile(r"sm\d+_xmma|xmma_|cublas|gemv|gemmk|nvjet|^(ampere|volta|turing|hopper|sm\d+)_.*gemm|"
                r"cutlass|splitKreduce|gemm", re.I), "cuBLAS"),
    (re.compile(r"\bcub::|DeviceReduce|DeviceScan|DeviceRadixSort|DeviceSegmented"), "CUB"),
    (re.compile(r"thrust::"), "Thrust"),
    (re.compile(r"^cupy_"), "CuPy"),
    (re.compile(r"cudapy|numba", re.I), "Numba"),
    (re.compile(r"at::|at_cuda_detail|c10::|^void \(anonymous namespace\)::"), "torch"),
)


def allowed(name: str) -> str | None:
    """What an allow-listed kernel is, or None."""
    for pattern, what in ALLOWED_KERNELS:
        if pattern.search(name):
            return what
    return None


def library_of(name: str) -> str | None:
    for pattern, library in _LIBRARIES:
        if pattern.search(name):
            return library
    return None


def short(name: str, limit: int = 72) -> str:
    """A kernel's name as a message shows it: C++ signatures without their argument lists, then cut."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    depth, cut = 0, None
    for i, ch in enumerate(name):  # drop the top-level argument list "(...)" of a demangled signature
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    if cut:
        name = name[:cut]
    return name if len(name) <= limit else name[:limit - 1] + "…"


def foreign_kernels(device: "DeviceTrace", own: dict[str, int]) -> list[tuple["DeviceOp", int]]:
    """Kernels in the trace that the learner's own launches do not account for: (kernel, how many runs
    are unaccounted for), the longest first. `own`: launches of the learner's kernels, by name."""
    out = []
    for op in device.kernels():
        if allowed(op.name):
            continue
        extra = op.count - own.get(op.name, 0)
        if extra > 0:
            out.append((op, extra))
    return out


def describe(op: "DeviceOp") -> str:
    library = library_of(op.name)
    return f"{library + ' kernel' if library else 'a kernel your code did not make,'} `{short(op.name)}`"
