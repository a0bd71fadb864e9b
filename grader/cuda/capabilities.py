"""What an architecture can do for the course, found by compiling for it with the compilers installed
here, never assumed from its name.

Each capability is a small probe kernel compiled for the architecture and a look at what came out:

- "tensor-core tl.dot": Triton's `tl.dot` on fp16 blocks becomes tensor-core instructions (`mma.sync`,
  `wgmma` on Hopper). Triton 3.3 and later lower it to plain FMA on sm_75, so there a Triton kernel
  cannot approach torch.mm, which reaches the tensor cores through cuBLAS.
- "WMMA": CUDA C's `wmma::mma_sync` (chapter 4) compiles through NVRTC to tensor-core instructions.
- "cp.async": the asynchronous copy to shared memory (chapter 4's stretch goal) assembles; ptxas
  refuses it below sm_80.
- "TMA": a Triton kernel that loads and stores through tensor descriptors (chapter 5's Hopper rung)
  compiles to the Tensor Memory Accelerator's bulk tensor copies (`cp.async.bulk.tensor`). Below
  sm_90 Triton still compiles it, but turns the descriptors into ordinary loads and stores.
- "FP8 tensor cores": Triton's `tl.dot` on e4m3 blocks compiles to tensor-core MMAs on fp8 operands
  (`mma.sync...e4m3.e4m3` on sm_89, `wgmma...e4m3.e4m3` on sm_90). Below sm_89 Triton refuses the type
  itself ("type fp8e4nv not supported in this architecture"): chapter 9's kernels do not compile there.
- "block-scaled MMA": Triton's `tl.dot_scaled` on e4m3 blocks with e8m0 scales (the MX formats) compiles to
  tensor-core MMAs that apply the scales themselves (`tcgen05.mma...block_scale` on sm_100,
  `mma.sync...block_scale` on sm_120). On sm_89 and sm_90 Triton emulates it: the operands are scaled and
  converted to bf16, then multiplied on bf16 tensor cores.

A probe takes a second or so (Triton's own cache makes it faster the next time) and is cached for the
process. No GPU is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from ..errors import LadderError
from .archs import Arch, by_name


@dataclass(frozen=True)
class Finding:
    capability: str
    arch: str
    present: bool
    evidence: str      # what the compile showed, in a sentence


@dataclass(frozen=True)
class Capability:
    name: str
    meaning: str                              # what it is, for the doctor's table
    probe: Callable[[Arch], tuple[bool, str]]
    # Without it, a kernel that uses the technique cannot even be compiled ("cannot run"), or it runs
    # but on slower units than the bar was calibrated with ("out of reach").
    without: str = "out of reach"
    consequence: str = ""                     # what that means for a learner's kernel, in a sentence


# ------------------------------------------------------------------------------------- probes

_TL_DOT_SHAPE = (64, 64, 32)


def _probe_tl_dot(arch: Arch) -> tuple[bool, str]:
    import torch
    import triton

    from . import crosscompile

    kernel = _tl_dot_kernel()
    m, n, k = _TL_DOT_SHAPE
    a = torch.empty(m, k, dtype=torch.float16, device="meta")
    b = torch.empty(k, n, dtype=torch.float16, device="meta")
    c = torch.empty(m, n, dtype=torch.float16, device="meta")
    (launch,) = crosscompile.record(lambda: kernel[(1,)](a, b, c, BM=m, BN=n, BK=k))
    (built,) = crosscompile.build(launch, arch)
    ops = built.tensor_core_ops()
    where = f"Triton {triton.__version__} compiles an fp16 tl.dot ({m}x{n}x{k}) for {arch.name}"
    if ops:
        return True, f"{where} to {', '.join(f'{n} {op}' for op, n in ops.items())} in the PTX"
    return False, (f"{where} to {built.fma_count():,} fma.rn.f32 and no mma in the PTX: plain FMA units, no "
                   "tensor cores")


@lru_cache(maxsize=1)
def _tl_dot_kernel():
    import triton
    import triton.language as tl

    from .crosscompile import quiet_triton

    with quiet_triton():
        @triton.jit
        def ladder_tl_dot_probe(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rows, cols, ks = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
            a = tl.load(a_ptr + rows[:, None] * BK + ks[None, :])
            b = tl.load(b_ptr + ks[:, None] * BN + cols[None, :])
            tl.store(c_ptr + rows[:, None] * BN + cols[None, :], tl.dot(a, b).to(tl.float16))

    return ladder_tl_dot_probe


_TMA_SHAPE = (64, 64)


def _probe_tma(arch: Arch) -> tuple[bool, str]:
    # Probed by compiling, like tl.dot: Triton accepts a descriptor kernel for every architecture (it
    # lowers descriptors to pointer loads where there is no TMA), so only the PTX says which it did.
    import torch
    import triton

    from . import crosscompile

    kernel = _tma_kernel()
    rows, cols = _TMA_SHAPE
    x = torch.empty(rows, cols, dtype=torch.float16, device="meta")
    y = torch.empty(rows, cols, dtype=torch.float16, device="meta")
    (launch,) = crosscompile.record(lambda: kernel[(1,)](x, y, rows, cols, BR=rows, BC=cols))
    (built,) = crosscompile.build(launch, arch)
    copies = built.ptx.count("cp.async.bulk.tensor")
    where = f"Triton {triton.__version__} compiles a tensor-descriptor copy ({rows}x{cols} fp16) for {arch.name}"
    if copies:
        return True, f"{where} to {copies} cp.async.bulk.tensor (TMA) in the PTX"
    return False, f"{where} to ordinary loads and stores: no cp.async.bulk.tensor in the PTX"


@lru_cache(maxsize=1)
def _tma_kernel():
    import triton
    import triton.language as tl

    from .crosscompile import quiet_triton

    with quiet_triton():
        @triton.jit
        def ladder_tma_probe(x_ptr, y_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
            src = tl.make_tensor_descriptor(x_ptr, shape=[R, C], strides=[C, 1], block_shape=[BR, BC])
            dst = tl.make_tensor_descriptor(y_ptr, shape=[R, C], strides=[C, 1], block_shape=[BR, BC])
            dst.store([0, 0], src.load([0, 0]))

    return ladder_tma_probe


_FP8_SHAPE = (64, 64, 32)


def _fp8_launch(scaled: bool, arch: Arch):
    """The probe kernel's launch compiled for `arch` (one build), or the compiler's refusal as a sentence."""
    import torch

    from . import crosscompile

    m, n, k = _FP8_SHAPE
    a = torch.empty(m, k, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(n, k, dtype=torch.float8_e4m3fn, device="meta")
    scales = torch.empty(max(m, n), k // 32, dtype=torch.uint8, device="meta")
    c = torch.empty(m, n, dtype=torch.float32, device="meta")
    kernel = _fp8_probe_kernel()
    (launch,) = crosscompile.record(lambda: kernel[(1,)](a, scales, b, scales, c, BM=m, BN=n, BK=k, SCALED=scaled))
    try:
        (built,) = crosscompile.build(launch, arch)
    except Exception as exc:  # noqa: BLE001 - Triton's refusal is the finding
        import re

        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        last = lines[-1] if lines else type(exc).__name__
        quoted = re.fullmatch(r"\w+\(\s*[\"'](.*)[\"']\s*\)", last)   # ValueError("...") -> ...
        return None, quoted.group(1) if quoted else last
    return built, ""


def _mma_opcodes(ptx: str) -> dict[str, int]:
    import re

    found: dict[str, int] = {}
    for op in re.findall(r"^\s*(?:@!?%?\w+\s+)?((?:wgmma\.mma_async|mma\.sync|tcgen05\.mma)[\w.:]*)", ptx, re.M):
        found[op] = found.get(op, 0) + 1
    return found


def _probe_fp8(arch: Arch) -> tuple[bool, str]:
    import triton

    built, refusal = _fp8_launch(False, arch)
    m, n, k = _FP8_SHAPE
    where = f"Triton {triton.__version__} compiles an e4m3 tl.dot ({m}x{n}x{k}) for {arch.name}"
    if built is None:
        return False, f"Triton {triton.__version__} refuses an e4m3 tl.dot for {arch.name}: {refusal}"
    fp8 = {op: count for op, count in _mma_opcodes(built.ptx).items() if ".e4m3" in op}
    if fp8:
        return True, f"{where} to {', '.join(f'{count} {op}' for op, count in fp8.items())} in the PTX"
    return False, f"{where} without an MMA on fp8 operands in the PTX"


def _probe_block_scaled(arch: Arch) -> tuple[bool, str]:
    import triton

    built, refusal = _fp8_launch(True, arch)
    where = f"Triton {triton.__version__} compiles tl.dot_scaled (e4m3, e8m0 scales per 32) for {arch.name}"
    if built is None:
        return False, f"Triton {triton.__version__} refuses tl.dot_scaled on e4m3 for {arch.name}: {refusal}"
    ops = _mma_opcodes(built.ptx)
    scaled = {op: count for op, count in ops.items() if "block_scale" in op}
    if scaled:
        return True, f"{where} to {', '.join(f'{count} {op}' for op, count in scaled.items())} in the PTX"
    shown = ", ".join(f"{count} {op}" for op, count in ops.items() if "fence" not in op and "commit" not in op
                      and "wait" not in op) or "no MMA"
    return False, (f"{where} to {shown} in the PTX: the scales are applied before a bf16 MMA, not by the tensor "
                   "cores")


@lru_cache(maxsize=1)
def _fp8_probe_kernel():
    """One e4m3 tile product, as tl.dot (SCALED false) or as tl.dot_scaled with e8m0 scales per 32 (SCALED true)."""
    import triton
    import triton.language as tl

    from .crosscompile import quiet_triton

    with quiet_triton():
        @triton.jit
        def ladder_fp8_probe(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr, SCALED: tl.constexpr):
            rows, cols, ks = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
            a = tl.load(a_ptr + rows[:, None] * BK + ks[None, :])
            b = tl.load(b_ptr + cols[None, :] * BK + ks[:, None])
            if SCALED:
                groups = tl.arange(0, BK // 32)
                sa = tl.load(as_ptr + rows[:, None] * (BK // 32) + groups[None, :])
                sb = tl.load(bs_ptr + cols[:, None] * (BK // 32) + groups[None, :])
                c = tl.dot_scaled(a, sa, "e4m3", b, sb, "e4m3")
            else:
                c = tl.dot(a, b)
            tl.store(c_ptr + rows[:, None] * BN + cols[None, :], c)

    return ladder_fp8_probe


_WMMA_PROBE = """#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void ladder_wmma_probe(const half* a, const half* b, float* c)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
"""

_CP_ASYNC_PROBE = """extern "C" __global__ void ladder_cp_async_probe(const float4* in, float4* out)
{
    __shared__ float4 tile[32];
    const unsigned dst = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(dst), "l"(in + threadIdx.x));
    asm volatile("cp.async.commit_group;\\n" ::);
    asm volatile("cp.async.wait_group 0;\\n" ::);
    __syncthreads();
    out[threadIdx.x] = tile[31 - threadIdx.x];
}
"""


def _nvrtc(source: str, name: str, arch: Arch):
    from .nvrtc import binding, compile_cuda

    return compile_cuda(source, name, arch.name), binding().version


def _probe_wmma(arch: Arch) -> tuple[bool, str]:
    from ..errors import KernelCompileError

    try:
        compiled, nvrtc = _nvrtc(_WMMA_PROBE, "ladder_wmma_probe", arch)
    except KernelCompileError as exc:
        return False, f"a WMMA kernel does not compile for {arch.name}: {str(exc).splitlines()[-1]}"
    found = compiled.ptx.count("mma.sync")
    return found > 0, f"{nvrtc} compiles a WMMA kernel for {arch.name} to {found} mma.sync in the PTX"


def _probe_cp_async(arch: Arch) -> tuple[bool, str]:
    from ..errors import KernelCompileError

    try:
        _, nvrtc = _nvrtc(_CP_ASYNC_PROBE, "ladder_cp_async_probe", arch)
    except KernelCompileError as exc:
        refused = [line.split("error", 1)[-1].strip(" :") for line in str(exc).splitlines() if "requires" in line]
        return False, f"ptxas refuses cp.async for {arch.name}: {refused[0] if refused else str(exc).splitlines()[-1]}"
    return True, f"{nvrtc} assembles cp.async for {arch.name}"


CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    Capability("tensor-core tl.dot", "tensor cores for Triton's tl.dot on fp16", _probe_tl_dot,
               consequence="torch still runs on the tensor cores (cuBLAS and its own kernels), so no correct Triton "
                           "kernel can reach a bar set against them"),
    Capability("WMMA", "tensor cores for CUDA C's WMMA", _probe_wmma, without="cannot run",
               consequence="a WMMA kernel does not compile"),
    Capability("cp.async", "cp.async (asynchronous copies from global to shared memory)", _probe_cp_async,
               without="cannot run", consequence="a kernel that uses cp.async does not compile"),
    Capability("TMA", "TMA (the Tensor Memory Accelerator: bulk tensor copies through tensor descriptors)",
               _probe_tma, without="cannot run",
               consequence="a kernel written for TMA runs there only as ordinary loads, so its check is skipped"),
    Capability("FP8 tensor cores", "tensor cores for Triton's tl.dot on fp8 (e4m3)", _probe_fp8, without="cannot run",
               consequence="chapter 9's fp8 kernels do not compile for this GPU: their correctness is checked on the "
                           "CPU in Triton's interpreter, and their speed cannot be measured"),
    Capability("block-scaled MMA", "tensor cores that apply MX block scales themselves (tl.dot_scaled)",
               _probe_block_scaled,
               consequence="Triton emulates tl.dot_scaled with scaled bf16 operands, so a micro-scaled GEMM runs at "
                           "bf16 speed, and a bar set for hardware block scaling is out of reach"),
)}


@lru_cache(maxsize=None)
def find(capability: str, arch: Arch | str) -> Finding:
    """Compile the capability's probe for `arch` (an Arch, or "sm_75") and say what it showed. A probe
    that cannot run here (no Triton, no NVRTC) raises LadderError rather than guess."""
    if capability not in CAPABILITIES:
        raise LadderError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
    arch = by_name(arch) if isinstance(arch, str) else arch
    try:
        present, evidence = CAPABILITIES[capability].probe(arch)
    except ImportError as exc:  # no Triton, or no NVRTC binding: nothing to compile with
        raise LadderError(f"cannot check {capability} for {arch.name}: {exc}") from None
    return Finding(capability, arch.name, present, evidence)
