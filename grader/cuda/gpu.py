"""The GPU this process sees (or why it sees none), and the versions of what the course runs on."""

from __future__ import annotations

import platform
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata

from .. import config


@lru_cache(maxsize=1)
def gpu_or_reason() -> tuple[bool, str]:
    """(True, "") when torch sees a CUDA GPU, else (False, why not)."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if config.force_no_gpu():
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
    for dist in ("nbgrader", "nbclient", "nbval", "cuda-bindings", "cuda-pathfinder"):
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
