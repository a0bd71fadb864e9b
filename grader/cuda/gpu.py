"""The GPU this process sees (or why it sees none), and the versions of what the course runs on."""

from __future__ import annotations

import platform
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata

from .. import config
from . import archs


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
    _count_devices_once(torch)
    return True, ""


def _count_devices_once(torch) -> None:
    """Hand torch the device count that `is_available` has just taken from CUDA itself.

    Why: torch 2.11 counts the devices again through NVML when CUDA first starts in a process (the capability
    check of `torch.cuda._lazy_init`), and NVML's start opens every GPU of the machine under the driver's
    machine-wide lock. Every process a check runs in pays it: with a fresh pair of processes for each check, 9 s of a
    chapter-1 student's check processes alone, 14 s with four students at once, for nothing cuInit had not
    already counted (assets/results/class-grading/driver-lock-h100x4). cuInit has run here, so
    CUDA_VISIBLE_DEVICES can no longer change for this process and the count is final; newer torch skips NVML
    there by itself, and then the cache is already filled or filled the same way."""
    cuda = torch.cuda
    if getattr(cuda, "_cached_device_count", 0) is None:
        cuda._cached_device_count = torch._C._cuda_getDeviceCount()


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


def arch_here() -> archs.Arch | None:
    """The architecture compiled for now: the one grader.cuda.archs.targeting names, else this GPU's,
    with the device's own limits where torch reports them; None without either."""
    from dataclasses import replace

    chosen = archs.target()
    if chosen is not None:
        return chosen
    info = gpu_info()
    if info is None:
        return None
    arch = archs.of_capability(info.capability, info.name)
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    measured = {"max_shared_per_block": getattr(props, "shared_memory_per_block_optin", None),
                "max_threads_per_sm": getattr(props, "max_threads_per_multi_processor", None),
                "registers_per_sm": getattr(props, "regs_per_multiprocessor", None),
                "shared_per_sm": getattr(props, "shared_memory_per_multiprocessor", None)}
    return replace(arch, **{k: int(v) for k, v in measured.items() if v})


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


DISTRIBUTION = "kernel-ladder"
# The CuPy builds are one package for the course: the range declared for the CUDA 12 build holds for
# whichever is installed (README, "Set up": its line on CUDA 13 drivers).
_CUPY_BUILDS = ("cupy-cuda12x", "cupy-cuda13x", "cupy")


def version_warnings() -> list[str]:
    """Every installed dependency whose version is outside the range the course declares.

    The ranges are read from this package's own installed metadata (pyproject.toml's dependencies, as
    pip recorded them), so they are written once; for an editable install, `pip install -e .` again
    after changing them."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # an offline environment built without it: say so, check nothing
        return ["the `packaging` package is not installed, so installed versions were not compared with the "
                "tested ranges"]
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return [f"the course is not installed as the package {DISTRIBUTION!r} (`pip install -e .`), so the "
                "versions it was tested with cannot be read"]
    warnings = []
    for text in declared:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra (dev), or another platform's
        names = _CUPY_BUILDS if req.name in _CUPY_BUILDS else (req.name,)
        for name in names:
            installed = _version(name)
            if installed is not None and not req.specifier.contains(installed, prereleases=True):
                warnings.append(f"{name} {installed} is outside the tested range {req.name}{req.specifier}: the "
                                f"course may work, but nobody has checked (pyproject.toml says what was)")
    return warnings


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
