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
