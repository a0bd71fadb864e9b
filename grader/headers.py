"""Find the CUDA headers that NVRTC needs beyond its built-ins.

pip-installed CuPy ships only part of the toolkit's headers: `#include <mma.h>` (chapter 4) fails
there with "cannot open source file crt/mma.h". The header lives in a full toolkit (CUDA_PATH,
/usr/local/cuda) and in NVIDIA's pip wheels (`nvidia-cuda-runtime` has mma.h, `nvidia-cuda-nvcc`
has crt/mma.h; the CUDA 13 wheels put both under nvidia/cu13/include). We look in all of them.
"""

from __future__ import annotations

import os
import site
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


def _site_dirs() -> list[Path]:
    dirs = []
    for d in [*sys.path, *site.getsitepackages(), site.getusersitepackages()]:
        p = Path(d)
        if p.is_dir() and p not in dirs:
            dirs.append(p)
    return dirs


def candidate_include_dirs() -> list[Path]:
    """Every folder that might hold CUDA headers, most specific first."""
    found: list[Path] = []

    def add(p: Path) -> None:
        if p.is_dir() and p not in found:
            found.append(p)

    for var in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"):
        if os.environ.get(var):
            add(Path(os.environ[var]) / "include")
            add(Path(os.environ[var]) / "targets" / "x86_64-linux" / "include")
    for d in _site_dirs():
        nvidia = d / "nvidia"
        if nvidia.is_dir():
            for sub in sorted(nvidia.iterdir()):
                add(sub / "include")
    add(Path("/usr/local/cuda/include"))
    add(Path("/usr/local/cuda/targets/x86_64-linux/include"))
    return found


@dataclass(frozen=True)
class HeaderReport:
    mma_h: Path | None
    crt_mma_h: Path | None

    @property
    def ok(self) -> bool:
        return self.mma_h is not None and self.crt_mma_h is not None

    @property
    def include_dirs(self) -> list[Path]:
        dirs = []
        for header, rel in ((self.mma_h, 1), (self.crt_mma_h, 2)):
            if header is not None:
                d = header.parents[rel - 1]
                if d not in dirs:
                    dirs.append(d)
        return dirs

    def describe(self) -> str:
        if self.ok:
            where = ", ".join(str(d) for d in self.include_dirs)
            return f"mma.h and crt/mma.h found ({where}): chapter 4 can include <mma.h>"
        missing = [name for name, p in (("mma.h", self.mma_h), ("crt/mma.h", self.crt_mma_h)) if p is None]
        return (f"{' and '.join(missing)} not found: chapter 4's WMMA kernels will not compile. "
                "Install the headers with `pip install nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12` "
                "(or -cu13 to match cupy-cuda13x), or set CUDA_PATH to a CUDA toolkit.")


@lru_cache(maxsize=1)
def find_wmma_headers() -> HeaderReport:
    mma = crt = None
    for d in candidate_include_dirs():
        if mma is None and (d / "mma.h").is_file():
            mma = d / "mma.h"
        if crt is None and (d / "crt" / "mma.h").is_file():
            crt = d / "crt" / "mma.h"
    return HeaderReport(mma, crt)


def include_options(source: str) -> list[str]:
    """-I options for a kernel source: only when it includes headers, so plain kernels never mix
    headers from two CUDA versions."""
    if "#include" not in source:
        return []
    return [f"-I{d}" for d in find_wmma_headers().include_dirs]
