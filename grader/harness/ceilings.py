"""The GPU's ceilings, which every chapter measures against: device-to-device copy bandwidth (bytes read
plus bytes written), and matmul throughput through torch in fp32 (TF32 off) and fp16, and in fp8 where the
GPU has FP8 tensor cores (chapter 9: `torch._scaled_mm` with one scale a tensor, cuBLAS). They are measured
once per GPU and cached as JSON (LADDER_CACHE_DIR), so plots and reports can quote them without measuring
again.

A cached file is the learner's to edit, so no verdict rests on it. A copy-ceiling bar (grader/bars.toml,
`kind = "copy-ceiling"`) is graded against the copy ceiling measured in the same run instead: a copy
contender (`CopyCeiling`) is timed in the speed check's own interleaved rounds, by the same backend and the
same process as the torch baseline (the grader's verifier, when grading), and `ceiling_fraction` is the one
place the fraction is computed."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import config
from ..cuda.gpu import GPUInfo, gpu_info, gpu_or_reason, matmul_precision
from ..cuda.sharing import require_own_gpu

@dataclass(frozen=True)
class Ceilings:
    gpu: str
    copy_gbps: float       # device-to-device copy, bytes read + bytes written per second / 1e9
    fp32_tflops: float     # torch.mm fp32 with TF32 off
    fp16_tflops: float     # torch.mm fp16 (tensor cores)
    measured: str          # when, ISO 8601
    torch: str
    fp8_tflops: float | None = None   # torch._scaled_mm e4m3, one scale a tensor; None: no FP8 tensor cores

    def value(self, name: str) -> float:
        """The ceiling `name`; 0.0 for one this GPU has not got (fp8 below compute capability 8.9)."""
        return float(getattr(self, name) or 0.0)


def _cache_file(info: GPUInfo) -> Path:
    safe = "".join(c if c.isalnum() else "-" for c in f"{info.name}-{info.uuid}")[:120]
    return config.cache_dir() / f"ceilings-{safe}.json"


def measure_ceilings() -> Ceilings:
    """Measure the two ceilings on the current GPU (about 5 seconds) and cache them."""
    require_own_gpu("measuring the GPU's ceilings")
    import torch
    from triton.testing import do_bench

    info = gpu_info()
    if info is None:
        raise RuntimeError(gpu_or_reason()[1])
    gen = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    # 1 GiB each way: far above any L2, so this is HBM, not cache.
    n = (1 << 30) // 4
    src = torch.randn(n, device="cuda", generator=gen)
    dst = torch.empty_like(src)
    copy_ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=300, return_mode="median")
    copy_gbps = 2 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9
    del src, dst

    def matmul_tflops(dtype, size):
        a = torch.randn(size, size, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(size, size, device="cuda", dtype=dtype, generator=gen)
        ms = do_bench(lambda: torch.mm(a, b), warmup=50, rep=300, return_mode="median")
        return 2 * size**3 / (ms * 1e-3) / 1e12

    with matmul_precision("highest"):
        fp32 = matmul_tflops(torch.float32, 4096)
    fp16 = matmul_tflops(torch.float16, 8192)
    fp8 = _fp8_tflops(gen, do_bench) if info.capability >= (8, 9) else None
    torch.cuda.empty_cache()
    c = Ceilings(gpu=info.name, copy_gbps=round(copy_gbps, 1), fp32_tflops=round(fp32, 2),
                 fp16_tflops=round(fp16, 1), measured=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 torch=torch.__version__, fp8_tflops=round(fp8, 1) if fp8 else None)
    try:
        path = _cache_file(info)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(c), indent=2))
    except OSError:  # a read-only home must not stop a check
        pass
    return c


def _fp8_tflops(gen, do_bench, size: int = 8192) -> float | None:
    """torch._scaled_mm on e4m3 at size^3 with one fp32 scale a tensor, cuBLAS's fastest FP8 path (its
    fast accumulation off, as chapter 9's block-scaled baseline). None where this torch cannot run it."""
    import torch

    try:
        a = torch.randn(size, size, device="cuda", generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        ms = do_bench(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), warmup=50, rep=300,
                      return_mode="median")
    except (RuntimeError, AttributeError):  # no FP8 GEMM in this torch or cuBLAS: no ceiling, said as None
        return None
    return 2 * size**3 / (ms * 1e-3) / 1e12


def ceilings(remeasure: bool = False) -> Ceilings | None:
    """Cached ceilings for this GPU, measured now if there are none. None without a GPU."""
    if gpu_info() is None:
        return None
    return (None if remeasure else cached_ceilings()) or measure_ceilings()


# ------------------------------------------------------------------ the copy ceiling, measured in the run

COPY_NAME = "copy ceiling"     # the contender's name in a speed check's timings
COPY_MIN_BYTES = 256 << 20     # each way: far above the L2 of the GPUs the course names (50-60 MB)
COPY_L2_MULTIPLE = 4           # and at least this many times this GPU's own L2
COPY_CPU_BYTES = 32 << 20      # without a GPU (the CPU backend's tests of the same path)


class CopyCeiling:
    """A device-to-device copy of a buffer far larger than the L2, timed as a contender of a speed check.

    Its round medians give the copy ceiling of this run (bytes read plus written per second); its buffers are
    the grader's own (allocated in the process that times, filled from the OS seed), so nothing the learner's
    code writes can make it slower or faster except by loading the GPU, which slows torch's baseline alike."""

    def __init__(self, device: str):
        import torch

        from .correctness import fresh_generator

        nbytes = COPY_CPU_BYTES
        if device == "cuda":
            info = gpu_info()
            nbytes = max(COPY_MIN_BYTES, COPY_L2_MULTIPLE * (info.l2_bytes if info else 0))
        gen, _ = fresh_generator(device)
        self.src = torch.randn(nbytes // 4, generator=gen, device=device)
        self.dst = torch.empty_like(self.src)
        self.bytes = 2 * self.src.numel() * 4     # read once, written once

    def __call__(self):
        return self.dst.copy_(self.src)

    def gbps(self, ms: float) -> float:
        return self.bytes / (ms * 1e-3) / 1e9


def ceiling_fraction(bytes_moved: int, ms: float, copy_bytes: int, copy_ms: float) -> float:
    """The learner's rate, `bytes_moved` in `ms`, as a fraction of the copy rate measured in the same run
    (`copy_bytes` read plus written in `copy_ms`): the figure a copy-ceiling bar grades. Both times are the
    same run's, from the same clock: the trusted time of the learner's calls, and the asking process's own
    timing of its copy."""
    if ms <= 0 or copy_ms <= 0:
        raise ValueError(f"a fraction of the copy ceiling needs positive times, got {ms} ms and {copy_ms} ms")
    return (bytes_moved / ms) / (copy_bytes / copy_ms)


def cached_ceilings() -> Ceilings | None:
    """The cached ceilings of this GPU, or None (no GPU, never measured, or a stale cache)."""
    info = gpu_info()
    if info is None:
        return None
    path = _cache_file(info)
    try:
        return Ceilings(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
