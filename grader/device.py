"""Find the GPU, the library versions, and the GPU's two ceilings.

The ceilings are what every chapter measures against: device-to-device copy bandwidth (bytes read
plus bytes written) and matmul throughput through torch in fp32 (TF32 off) and fp16. They are
measured once per GPU and cached as JSON, so plots and reports can quote them without re-measuring.
"""

from __future__ import annotations

from contextlib import contextmanager

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path


@lru_cache(maxsize=1)
def gpu_or_reason() -> tuple[bool, str]:
    """(True, "") when torch sees a CUDA GPU, else (False, why not)."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if os.environ.get("LADDER_FORCE_NO_GPU"):
        return False, "no GPU found (LADDER_FORCE_NO_GPU is set)"
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            return False, f"no GPU found: this torch ({torch.__version__}) is a CPU-only build"
        return False, "no GPU found: torch has CUDA but sees no device (no NVIDIA GPU, or no driver)"
    return True, ""


def has_gpu() -> bool:
    return gpu_or_reason()[0]


def free_gpu_bytes() -> int:
    import torch

    free, _ = torch.cuda.mem_get_info()
    return int(free)


@dataclass(frozen=True)
class GPUInfo:
    name: str
    capability: tuple[int, int]
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    uuid: str

    @property
    def cc(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"


def gpu_info() -> GPUInfo | None:
    if not has_gpu():
        return None
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return GPUInfo(name=p.name, capability=(p.major, p.minor), sm_count=p.multi_processor_count,
                   l2_bytes=getattr(p, "L2_cache_size", 0), memory_bytes=p.total_memory,
                   uuid=str(getattr(p, "uuid", p.name)))


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """Versions of everything the course depends on; missing ones say so."""
    out = {"python": platform.python_version()}
    try:
        import torch
        cuda = torch.version.cuda or "CPU-only build"
        out["torch"] = f"{torch.__version__} (CUDA {cuda})" if torch.version.cuda else f"{torch.__version__} ({cuda})"
    except ImportError:
        out["torch"] = "not installed"
    out["triton"] = _version("triton") or "not installed"
    cupy_dists = [d for d in ("cupy-cuda12x", "cupy-cuda13x", "cupy") if _version(d)]
    out["cupy"] = ", ".join(f"{_version(d)} ({d})" for d in cupy_dists) or "not installed"
    if len(cupy_dists) > 1:
        out["cupy"] += "  <- more than one CuPy package: uninstall all but one"
    for dist in ("nbgrader", "nbclient", "nbval", "cuda-bindings"):
        out[dist] = _version(dist) or "not installed"
    return out


def driver_version() -> str | None:
    if not has_gpu():
        return None
    try:
        import cupy
        v = cupy.cuda.runtime.driverGetVersion()
        return f"CUDA {v // 1000}.{(v % 1000) // 10}"
    except Exception:
        return None


# --------------------------------------------------------------------------------------- ceilings

@dataclass(frozen=True)
class Ceilings:
    gpu: str
    copy_gbps: float       # device-to-device copy, bytes read + bytes written per second / 1e9
    fp32_tflops: float     # torch.mm fp32 with TF32 off
    fp16_tflops: float     # torch.mm fp16 (tensor cores)
    measured: str          # when, ISO 8601
    torch: str

    def value(self, name: str) -> float:
        return float(getattr(self, name))


def cache_dir() -> Path:
    base = os.environ.get("LADDER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kernel-ladder")
    return Path(base)


def _cache_file(info: GPUInfo) -> Path:
    safe = "".join(c if c.isalnum() else "-" for c in f"{info.name}-{info.uuid}")[:120]
    return cache_dir() / f"ceilings-{safe}.json"


@contextmanager
def matmul_precision(level: str = "highest"):
    """torch's fp32 matmuls at `level` inside ("highest": true fp32; "high": TF32 allowed), whatever
    the notebook set before; its settings come back afterwards.

    torch has two ways to set this, the legacy one (`allow_tf32`, `set_float32_matmul_precision`)
    and, since 2.9, `torch.backends.cuda.matmul.fp32_precision`. Mixing them makes the legacy getters
    raise, so we read what can be read, set both consistently, and put back what we read.
    """
    import torch

    matmul = torch.backends.cuda.matmul
    try:
        legacy = torch.get_float32_matmul_precision()
    except RuntimeError:  # the notebook used the new API: the legacy value is undefined
        legacy = None
    new = getattr(matmul, "fp32_precision", None)
    torch.set_float32_matmul_precision(level)
    matmul.allow_tf32 = level != "highest"
    try:
        yield
    finally:
        if legacy is not None:
            torch.set_float32_matmul_precision(legacy)
        if new is not None:
            matmul.fp32_precision = new


def measure_ceilings() -> Ceilings:
    """Measure the two ceilings on the current GPU (about 5 seconds) and cache them."""
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
    torch.cuda.empty_cache()
    c = Ceilings(gpu=info.name, copy_gbps=round(copy_gbps, 1), fp32_tflops=round(fp32, 2),
                 fp16_tflops=round(fp16, 1), measured=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 torch=torch.__version__)
    try:
        path = _cache_file(info)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(c), indent=2))
    except OSError:  # a read-only home must not stop a check
        pass
    return c


def ceilings(remeasure: bool = False) -> Ceilings | None:
    """Cached ceilings for this GPU, measured now if there are none. None without a GPU."""
    if gpu_info() is None:
        return None
    return (None if remeasure else cached_ceilings()) or measure_ceilings()


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


WHAT_STILL_WORKS = (
    "What still works without a GPU: reading every chapter; the napkin-math exercises and chapter 4's "
    "tensor-core check (graded); "
    "compile checks of your CUDA kernels through NVRTC (`ladder compile NOTEBOOK`); `ladder doctor`; "
    "the grader's own tests (`pytest`); and chapters 5 and 6, whose Triton kernels run on the CPU through "
    "Triton's interpreter at small sizes, correctness checked in full. CUDA C kernels (chapters 1-4) and "
    "every speed check need an NVIDIA GPU.")
