"""Where the CUDA toolkit's files are: the headers NVRTC needs beyond its built-ins, and the programs
the grader runs (ptxas, cuobjdump, nvdisasm, compute-sanitizer).

NVIDIA's `cuda-pathfinder` does the search: NVIDIA's pip wheels (both the CUDA 12 layout,
nvidia/cuda_nvcc/..., and CUDA 13's nvidia/cu13/...), conda environments, CUDA_PATH and CUDA_HOME.
Two places it does not look are added here: programs on PATH and the classic /usr/local/cuda, which
GPU images and clusters use, and the ptxas that Triton ships inside its own package.

Why headers matter: pip-installed CuPy ships only part of the toolkit's headers, so `#include
<mma.h>` (chapter 4) fails there with "cannot open source file crt/mma.h". `mma.h` comes with the
runtime's headers (cudart), `crt/mma.h` with the compiler's (nvcc).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_CLASSIC = (Path("/usr/local/cuda"),)


def _pathfinder():
    try:
        import cuda.pathfinder as pathfinder
    except ImportError:  # an older environment: the classic places below still work
        return None
    return pathfinder


def include_dirs_of(library: str) -> list[Path]:
    """Folders holding `library`'s headers ("cudart", "nvcc", "nvrtc"), most specific first."""
    found: list[Path] = []
    pathfinder = _pathfinder()
    if pathfinder is not None:
        try:
            where = pathfinder.find_nvidia_header_directory(library)
        except Exception:  # unknown to this pathfinder, or a broken install: look in the classic places
            where = None
        if where:
            found.append(Path(where))
    for root in [Path(os.environ[v]) for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)] + list(_CLASSIC):
        for d in (root / "include", root / "targets" / "x86_64-linux" / "include"):
            if d.is_dir() and d not in found:
                found.append(d)
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
        for header, depth in ((self.mma_h, 1), (self.crt_mma_h, 2)):
            if header is not None and header.parents[depth - 1] not in dirs:
                dirs.append(header.parents[depth - 1])
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
    mma = next((d / "mma.h" for d in include_dirs_of("cudart") + include_dirs_of("nvcc") if (d / "mma.h").is_file()),
               None)
    crt = next((d / "crt" / "mma.h" for d in include_dirs_of("nvcc") + include_dirs_of("cudart")
                if (d / "crt" / "mma.h").is_file()), None)
    return HeaderReport(mma, crt)


def include_options(source: str) -> list[str]:
    """-I options for a kernel source: only when it includes headers, so plain kernels never mix
    headers from two CUDA versions."""
    if "#include" not in source:
        return []
    return [f"-I{d}" for d in find_wmma_headers().include_dirs]


def tool_paths(tool: str) -> list[str]:
    """Every executable named `tool` found: through cuda-pathfinder, on PATH, in /usr/local/cuda/bin,
    and (for ptxas) Triton's own; each file once, in that order."""
    candidates: list[Path] = []
    pathfinder = _pathfinder()
    if pathfinder is not None and tool in getattr(pathfinder, "SUPPORTED_BINARY_UTILITIES", ()):
        try:
            where = pathfinder.find_nvidia_binary_utility(tool)
        except Exception:
            where = None
        if where:
            candidates.append(Path(where))
    on_path = shutil.which(tool)
    if on_path:
        candidates.append(Path(on_path))
    candidates += [root / "bin" / tool for root in _CLASSIC]
    if tool == "compute-sanitizer":  # NVIDIA's wheel keeps it one folder deeper than its bin/
        import site
        import sys

        for d in {*sys.path, *site.getsitepackages()}:
            candidates += sorted(Path(d or ".").glob("nvidia/*sanitizer*/**/compute-sanitizer"))
    if tool == "ptxas":
        try:
            import triton.backends.nvidia as tbn
            candidates.append(Path(tbn.__file__).parent / "bin" / "ptxas")
        except Exception:  # no Triton, or a layout without its own ptxas
            pass
    found, seen = [], set()
    for p in candidates:
        if p.is_file() and os.access(p, os.X_OK) and p.resolve() not in seen:
            seen.add(p.resolve())
            found.append(str(p))
    return found
