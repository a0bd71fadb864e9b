"""The course's own kernels (solutions/), compiled for any architecture the course knows, on a machine
with no GPU: what `ladder doctor --kernels` reports and tests/cuda/test_cross_arch.py asserts.

- CUDA C: every `NAME_SRC` string of every solution notebook, through NVRTC with ptxas's report of
  registers and shared memory (grader.cuda.resources).
- Triton: the solution notebook's cells run (definitions only) as if on the target GPU
  (grader.cuda.archs.targeting, so that chapter 5's choice of configurations sees the target's
  limits); the chapter's `solution_launches` call its launchers on meta tensors with every launch
  recorded, not run; each recorded launch is compiled for the target (grader.cuda.crosscompile), an
  autotuned one once per configuration it was given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from .. import chapters
from ..cuda import archs, crosscompile
from ..cuda.archs import Arch
from ..cuda.nvrtc import Compiled, compile_cuda
from ..cuda.resources import VERBOSE, Usage, launch_problems, parse_report
from ..errors import KernelCompileError, LadderError
from ..learner.cells import chapter_of, cuda_sources, grade_id, is_solution, source
from ..learner.code import run_cell
from .course import SOURCE_DIR, repo_root

_MAXNTID = re.compile(r"\.entry\s+(\w+)\s*\([^)]*\)\s*(?:\.maxntid\s+(\d+),\s*(\d+),\s*(\d+))?", re.S)


def solution_notebooks(root: Path | None = None) -> list[Path]:
    return sorted(((root or repo_root()) / SOURCE_DIR).glob("*/*.ipynb"))


# ------------------------------------------------------------------------------------------ CUDA C

@dataclass(frozen=True)
class CudaBuild:
    notebook: str              # "04_tensor_cores"
    source_name: str           # "WMMA_GEMM_SRC"
    arch: str
    compiled: Compiled | None = field(default=None, repr=False)
    usage: dict[str, Usage] = field(default_factory=dict)     # per kernel
    block_limit: dict[str, int | None] = field(default_factory=dict)   # __launch_bounds__, per kernel
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.compiled is not None

    def tensor_core_ops(self) -> int:
        return self.compiled.ptx.count("mma.sync") if self.compiled else 0

    def problems(self, arch: Arch) -> dict[str, list[str]]:
        """Per kernel: why its largest block cannot launch on `arch` (its launch bounds, or 1,024
        threads without them: the course's launchers use at most that)."""
        return {name: launch_problems(u, arch, self.block_limit.get(name) or 1024) for name, u in self.usage.items()}


def _launch_bounds(ptx: str) -> dict[str, int | None]:
    out = {}
    for m in _MAXNTID.finditer(ptx):
        out[m.group(1)] = int(m.group(2)) * int(m.group(3)) * int(m.group(4)) if m.group(2) else None
    return out


def cuda_kernels(root: Path | None = None) -> list[tuple[str, str, str]]:
    """(notebook folder, NAME_SRC, source) of every CUDA C kernel source in solutions/."""
    return [(nb.parent.name, name, src) for nb in solution_notebooks(root) for name, src in cuda_sources(nb)[0]]


def build_cuda(notebook: str, source_name: str, src: str, arch: Arch) -> CudaBuild:
    try:
        compiled = compile_cuda(src, source_name, arch.name, (VERBOSE,), ("ptx", "cubin"))
    except KernelCompileError as exc:
        return CudaBuild(notebook, source_name, arch.name, error=str(exc))
    return CudaBuild(notebook, source_name, arch.name, compiled, parse_report(compiled.log),
                     _launch_bounds(compiled.ptx))


def cuda_builds(arch: Arch, root: Path | None = None) -> list[CudaBuild]:
    return [build_cuda(nb, name, src, arch) for nb, name, src in cuda_kernels(root)]


# ------------------------------------------------------------------------------------------ Triton

def chapter_notebooks(root: Path | None = None) -> dict[str, Path]:
    """{chapter module name: its solution notebook}, for every chapter the registry knows."""
    found = {}
    for nb in solution_notebooks(root):
        chapter = chapter_of(json.loads(nb.read_text()), nb)
        if chapter in chapters.names():
            found[chapter] = nb
    return found


def triton_chapters(root: Path | None = None) -> dict[str, Path]:
    """The chapters whose module says how to reach its solution's Triton kernels (`solution_launches`)."""
    return {name: nb for name, nb in chapter_notebooks(root).items()
            if hasattr(chapters.module(name), "solution_launches")}


def _defines_triton_kernel(cell) -> bool:
    return cell.get("cell_type") == "code" and "@triton.jit" in source(cell)


def solution_namespace(chapter: str, notebook: Path, arch: Arch) -> dict:
    """The solution's names, as its cells define them on `arch`: the setup cell replaced by what it
    provides (torch, triton, the chapter module, a `session` on a GPU of that architecture, DEVICE on
    meta tensors), then every solution cell and every cell that defines a Triton kernel, definitions
    only (grader.learner.code)."""
    nb = json.loads(notebook.read_text())
    ns: dict = {"__name__": f"ladder_shipped_{chapter}_{arch.name}"}
    problems = []
    with crosscompile.quiet_triton(), archs.targeting(arch):
        # numpy and load_kernel too: a chapter with CUDA C beside its Triton (7) defines its CUDA kernels in
        # solution cells as well; defining one compiles nothing.
        exec("import math\nimport numpy as np\nimport torch\nimport triton\nimport triton.language as tl\n"
             "from grader.cuda.kernels import load_kernel\n", ns)
        # The SM count only sizes split-K's slices, which changes no specialisation: an H100's will do.
        ns.update(DEVICE="meta", **{chapter: chapters.module(chapter)},
                  session=SimpleNamespace(has_gpu=True, gpu=SimpleNamespace(sm_count=132, name=arch.describe())))
        for index, cell in enumerate(nb["cells"]):
            if is_solution(cell) or _defines_triton_kernel(cell):
                name = grade_id(cell) or f"cell-{index}"
                problems += run_cell(name, source(cell), ns, filename=f"<{chapter} {arch.name} {name}>")
    if problems:
        raise LadderError(f"{notebook.name}'s cells did not run for {arch.name}: " + "; ".join(problems))
    return ns


def triton_kernels_in(ns: dict) -> set[str]:
    """Names of the Triton kernels a namespace defines (autotuned or not)."""
    from triton.runtime.jit import JITFunction

    found = set()
    for value in ns.values():
        fn = value
        while hasattr(fn, "fn") and not isinstance(fn, JITFunction):
            fn = fn.fn
        if isinstance(fn, JITFunction):
            found.add(fn.__name__)
    return found


@dataclass
class TritonChapter:
    chapter: str
    arch: str
    defined: set[str]                                  # every kernel the notebook defines
    launches: list[crosscompile.RecordedLaunch]
    builds: list[crosscompile.TritonBuild] = field(default_factory=list)
    namespace: dict = field(default_factory=dict, repr=False)


def record_solution(chapter: str, notebook: Path, arch: Arch) -> TritonChapter:
    ns = solution_namespace(chapter, notebook, arch)
    recorded: list[crosscompile.RecordedLaunch] = []
    with crosscompile.quiet_triton(), archs.targeting(arch):
        for call in chapters.module(chapter).solution_launches(ns):
            recorded += crosscompile.record(call)
    return TritonChapter(chapter, arch.name, triton_kernels_in(ns), _distinct(recorded), namespace=ns)


def _distinct(recorded: list[crosscompile.RecordedLaunch]) -> list[crosscompile.RecordedLaunch]:
    """One launch per specialisation: two launches whose arguments are alike where Triton specialises
    (dtypes, alignment and divisibility by 16, integers equal to 1, constexprs) compile alike."""
    seen, out = set(), []
    for launch in recorded:
        key = (launch.name, crosscompile.specialisation_key(launch.args, launch.kwargs),
               tuple(crosscompile.describe_options(c.all_kwargs()) for c in launch.configs))
        if key not in seen:
            seen.add(key)
            out.append(launch)
    return out


@lru_cache(maxsize=None)
def triton_build(chapter: str, arch: Arch, root: Path | None = None) -> TritonChapter:
    """Every recorded launch of the chapter's solution compiled for `arch` (cached for the process)."""
    recorded = record_solution(chapter, triton_chapters(root)[chapter], arch)
    with crosscompile.quiet_triton():
        for launch in recorded.launches:
            recorded.builds += crosscompile.build(launch, arch)
    return recorded
