"""`ladder check --sanitize`: the learner's kernels under NVIDIA compute-sanitizer, at small sizes.

Two halves, in two processes:

- The runner, `python -m grader.sanitize NOTEBOOK --report FILE`, is the process compute-sanitizer
  wraps. It executes the notebook's learner code (the `setup` cell, then every nbgrader solution
  cell, in order, each under its own file name in `linecache`), then calls each exercise's launcher
  on a few small sizes through `check_correctness(EXERCISE, fn, sizes, trials=1)`. Caching
  allocators are off (PyTorch's and CuPy's), so a write past the end of a tensor lands outside any
  allocation rather than in pooled memory; CUDA C kernels are compiled with `-lineinfo`, so errors
  name lines. What it did (cells, kernels and their sources, exercise outcomes) goes to the report
  file, as JSON, after every step.
- The parent, `sanitize(paths)`, runs `compute-sanitizer --tool T ... python -m grader.sanitize`
  once per tool with a time limit, parses the sanitizer's log, maps each error's `file:line` back to
  the learner's own line (the kernel's CUDA string, or the notebook cell of a Triton kernel), and
  prints a summary per notebook. Any sanitizer error makes the exit status nonzero.

Which exercises, launchers and sizes each chapter uses is the table `PLANS` below.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from .errors import LadderError

SCHEMA = "kernel-ladder.sanitize/1"
TOOLS = ("memcheck", "racecheck", "synccheck")
ERROR_EXITCODE = 86          # compute-sanitizer's exit status when it found errors (--error-exitcode)
PRINT_LIMIT = 50             # errors printed per run: the summary groups them by kernel line anyway
DEFAULT_TIMEOUT_S = 900      # per tool and notebook: startup, compiles and small launches, instrumented
SHOWN_PER_TOOL = 3           # distinct problems printed per tool in the text summary
NAMESPACE = "ladder_notebook"  # __name__ of the learner's cells (not a module in sys.modules)
_ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------ the plan

@dataclass(frozen=True)
class Step:
    """One exercise check: `check_correctness(module.<exercise>, <launcher>, sizes, trials=1)`."""
    exercise: str             # the Exercise's name in the chapter module, e.g. "VECTOR_ADD"
    launcher: str             # the name the notebook defines, e.g. "vector_add"
    sizes: tuple
    adapt: str = ""           # "" (call as is), "triton" (ch05.learner), "causal" / "non-causal" (ch06.bind)
    stretch: bool = False     # a stretch goal: not written yet is expected and not worth a line


# Small sizes, with edges: 1, non-multiples of every block and tile size the solutions use, and one
# size that fills a few whole tiles. Few enough that every tool finishes in a few minutes.
PLANS: dict[str, tuple[Step, ...]] = {
    "ch01": (
        Step("VECTOR_ADD", "vector_add", (1, 31, 1000, 4099)),
        Step("FUSED", "fused_axpb_relu", (1, 31, 1000, 4099)),
        Step("VECTOR_ADD", "vector_add_v4", (1, 3, 31, 1001, 4099), stretch=True),
    ),
    "ch02": (
        Step("TRANSPOSE", "transpose", ((1, 1), (31, 33), (100, 37), (64, 64), (257, 130))),
        Step("TRANSPOSE", "transpose_wide", ((4, 4), (31, 33), (36, 100), (100, 36), (132, 68)), stretch=True),
    ),
    "ch03": (
        Step("SGEMM", "sgemm", ((1, 1, 1), (7, 13, 5), (129, 68, 36), (200, 256, 100))),
        Step("SGEMM", "sgemm_v2", ((1, 4, 4), (7, 13, 5), (129, 68, 36), (130, 260, 100)), stretch=True),
    ),
    "ch04": (
        Step("WMMA_GEMM", "wmma_gemm", ((1, 1, 1), (17, 33, 9), (129, 257, 95), (128, 256, 64), (136, 264, 40))),
        Step("WMMA_GEMM", "wmma_gemm_async", ((1, 1, 1), (17, 33, 9), (129, 257, 96), (136, 264, 40)),
             stretch=True),
    ),
    "ch05": (
        Step("MATMUL", "matmul", ((1, 1, 1), (33, 47, 95), (130, 260, 70)), adapt="triton"),
        Step("FUSED", "matmul_bias_act", ((1, 1, 1), (33, 47, 95), (130, 260, 70)), adapt="triton"),
        Step("SPLIT_K", "matmul_splitk", ((1, 1, 1), (31, 33, 35), (3, 100, 1500)), adapt="triton", stretch=True),
    ),
    "ch06": (
        Step("ATTENTION", "attention", ((1, 1, 1, 64), (1, 2, 100, 64), (2, 1, 77, 128), (1, 1, 129, 64)),
             adapt="non-causal"),
        Step("CAUSAL", "attention", ((1, 1, 1, 64), (1, 2, 100, 64), (2, 1, 77, 128), (1, 1, 129, 64)),
             adapt="causal"),
    ),
}

# The tools run when none is asked for. Triton allocates shared memory and places every barrier
# itself, so racecheck and synccheck would test Triton, not the learner (and may flag its
# asynchronous copies); ask for them with --tool.
DEFAULT_TOOLS = {"ch05": ("memcheck",), "ch06": ("memcheck",)}
TRITON_CHAPTERS = ("ch05", "ch06")


def tools_for(chapter: str | None, asked: Iterable[str] | None = None) -> tuple[str, ...]:
    if asked:
        return tuple(dict.fromkeys(asked))
    return DEFAULT_TOOLS.get(chapter or "", TOOLS)


# --------------------------------------------------------------------------- notebook cells

def _cell_source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def learner_cells(nb: dict) -> list[tuple[int, str, str]]:
    """(index, grade_id, source) of the setup cell and every nbgrader solution cell, in order."""
    from .isolate import is_learner_cell

    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        if is_learner_cell(cell):
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            found.append((index, gid or f"cell-{index}", _cell_source(cell)))
    return found


def chapter_of(nb: dict, path: Path | str = "") -> str | None:
    """"ch01".."ch06": from the setup cell's `from grader.chapters import chNN`, else the folder name."""
    for _, gid, src in learner_cells(nb):
        if gid == "setup":
            m = re.search(r"from\s+grader\.chapters\s+import\s+(ch\d\d)", src)
            if m:
                return m.group(1)
    m = re.match(r"(\d\d)_", Path(path).name)
    return f"ch{m.group(1)}" if m else None


def cell_filename(index: int, grade_id: str) -> str:
    """The file name a cell runs under: Triton's line info, and so the sanitizer's reports, use it."""
    return f"ladder_cell{index:02d}_{re.sub(r'[^A-Za-z0-9_-]', '_', grade_id)}.py"


def _without_magics(source: str) -> str:
    """IPython magics and shell escapes are not Python: blank them, keeping line numbers."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def run_cell(source: str, ns: dict, filename: str) -> None:
    """Execute one cell's source in `ns` under `filename`, registered in linecache as IPython does
    (`@triton.jit` reads a function's source through inspect)."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(_without_magics(source), filename, "exec"), ns)


# --------------------------------------------------------------------------------- the runner

class Report:
    """What the runner did, written as JSON after every step so that a crash loses nothing."""

    def __init__(self, path: Path | None, notebook: str):
        self.path = path
        self.data = {"notebook": notebook, "chapter": None, "device": None, "cells": [], "cell_sources": {},
                     "cuda_kernels": {}, "triton_kernels": {}, "exercises": [], "stopped": None,
                     "finished": False}
        self.current: dict | None = None

    def save(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)

    def cuda_kernel(self, kernel) -> None:
        self.data["cuda_kernels"].setdefault(kernel.name, {
            "file": f"{kernel.name}.cu", "where": kernel.where, "source": kernel.source})
        self.launched(kernel.name)
        self.save()

    def triton_kernel(self, fn) -> None:
        name = getattr(fn, "__name__", "?")
        self.data["triton_kernels"].setdefault(name, {"file": getattr(fn, "file_name", None)})
        self.launched(name)

    def launched(self, name: str) -> None:
        if self.current is not None and name not in self.current["kernels"]:
            self.current["kernels"].append(name)


def _allocators_off() -> None:
    """No caching allocators: each tensor and array is its own cudaMalloc, so memcheck sees its bounds."""
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    try:
        import cupy
    except ImportError:
        return
    cupy.cuda.set_allocator(None)
    cupy.cuda.set_pinned_memory_allocator(None)


def _watch_kernels(report: Report) -> None:
    """Compile CUDA C with -lineinfo, and record which kernels each exercise compiles and launches."""
    from . import kernels

    compile_, call = kernels.CudaKernel.compile, kernels.CudaKernel.__call__

    def compile_with_lines(self):
        if self._raw is None:
            if not {"-lineinfo", "--generate-line-info"} & set(self.options):
                self.options = (*self.options, "-lineinfo")
            report.cuda_kernel(self)
        return compile_(self)

    def call_recorded(self, *args, **kwargs):
        report.launched(self.name)
        return call(self, *args, **kwargs)

    kernels.CudaKernel.compile = compile_with_lines
    kernels.CudaKernel.__call__ = call_recorded


def _watch_triton(report: Report) -> None:
    """Record Triton launches once a cell has imported Triton. Never imports it first: without a GPU,
    start() must pick the interpreter before Triton is imported."""
    if "triton" not in sys.modules or os.environ.get("TRITON_INTERPRET") == "1":
        return
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return
    if getattr(JITFunction.run, "_ladder_recorded", False):
        return
    run_ = JITFunction.run

    def run_recorded(self, *args, **kwargs):
        report.triton_kernel(self)
        return run_(self, *args, **kwargs)

    run_recorded._ladder_recorded = True
    JITFunction.run = run_recorded


def _quiet_start(real_start):
    """`start()` without measuring the GPU's ceilings: under a sanitizer that would take minutes and
    prove nothing. Without a GPU it is the real start() (which switches Triton to its interpreter)."""

    def start(chapter: int):
        from .device import cached_ceilings, gpu_info
        from .notebook import Session

        info = gpu_info()
        if info is None:
            return real_start(chapter)
        print(f"Chapter {chapter} on {info.name}, under compute-sanitizer (ceilings not measured)")
        return Session(info, cached_ceilings())

    return start


def _first_lines(text: str, n: int = 6) -> str:
    lines = [l for l in str(text).strip().splitlines() if l.strip()]
    return "\n".join(lines[:n] + (["[...]"] if len(lines) > n else []))


def _context_lost() -> str | None:
    """After a failed check on the GPU: is the CUDA context still usable? (memcheck ends a kernel
    that makes an invalid access, and the context with it.)"""
    try:
        import torch
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def _adapted(module, step: Step, fn):
    ex = getattr(module, step.exercise)
    if step.adapt == "triton":
        return module.learner(ex, fn)
    if step.adapt in ("causal", "non-causal"):
        return module.bind(fn, step.adapt == "causal")
    return fn


def run(notebook: Path, report_path: Path | None = None, cells_only: bool = False,
        device: str | None = None) -> dict:
    """Execute the notebook's learner cells, then each exercise of its chapter's plan (the runner)."""
    _allocators_off()
    report = Report(report_path, str(notebook))
    nb = json.loads(Path(notebook).read_text())
    chapter = chapter_of(nb, notebook)
    report.data["chapter"] = chapter
    report.save()

    import grader
    from . import notebook as nbmod
    from .device import gpu_or_reason
    from .errors import CheckFailed, NoGPUError

    quiet = _quiet_start(nbmod.start)
    grader.start = nbmod.start = quiet
    _watch_kernels(report)

    ns: dict = {"__name__": NAMESPACE}
    for index, gid, source in learner_cells(nb):
        filename = cell_filename(index, gid)
        entry = {"index": index, "grade_id": gid, "file": filename, "outcome": "ok", "message": None}
        report.data["cells"].append(entry)
        report.data["cell_sources"][filename] = source
        try:
            run_cell(source, ns, filename)
        except NotImplementedError:
            entry["outcome"] = "not-written"
        except Exception as exc:  # the learner's cell failed: say so, go on with the others
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
            where = f" (line {frames[-1].lineno})" if frames else ""
            entry["outcome"], entry["message"] = "raised", f"{type(exc).__name__}{where}: {_first_lines(exc, 3)}"
        _watch_triton(report)
        report.save()
    if cells_only or chapter not in PLANS:
        if chapter not in PLANS:
            report.data["stopped"] = f"no exercise plan for chapter {chapter!r}"
        report.data["finished"] = True
        report.save()
        return report.data

    has_gpu = gpu_or_reason()[0]
    dev = device or ("cuda" if has_gpu else None)
    report.data["device"] = dev
    import importlib

    module = importlib.import_module(f"grader.chapters.{chapter}")
    from .exercise import check_correctness

    for step in PLANS[chapter]:
        ex = getattr(module, step.exercise)
        entry = {"key": ex.key, "title": ex.title, "launcher": step.launcher, "stretch": step.stretch,
                 "adapt": step.adapt, "sizes": [ex.describe_size(s) for s in step.sizes], "outcome": "ok",
                 "message": None, "kernels": []}
        report.data["exercises"].append(entry)
        report.current = entry
        fn = ns.get(step.launcher)
        if not callable(fn):
            entry["outcome"] = "missing"
            entry["message"] = f"the notebook defines no function `{step.launcher}`"
        elif dev is None:
            entry["outcome"], entry["message"] = "no-gpu", gpu_or_reason()[1]
        else:
            try:
                check_correctness(ex, _adapted(module, step, fn), list(step.sizes), trials=1, device=dev,
                                  verbose=False)
            except NotImplementedError:
                entry["outcome"] = "not-written"
            except NoGPUError as exc:
                entry["outcome"], entry["message"] = "no-gpu", _first_lines(exc)
            except CheckFailed as exc:
                entry["outcome"], entry["message"] = "failed", _first_lines(exc)
            except Exception as exc:  # a launcher that raises something else: report it, carry on
                entry["outcome"], entry["message"] = "raised", f"{type(exc).__name__}: {_first_lines(exc)}"
        report.current = None
        report.save()
        if entry["outcome"] in ("failed", "raised") and dev == "cuda":
            lost = _context_lost()
            if lost:
                report.data["stopped"] = (f"the GPU context was lost after {ex.key} ({step.launcher}): {lost}; "
                                          "the exercises after it were not run")
                break
    report.data["finished"] = True
    report.save()
    return report.data


def runner_main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.sanitize",
                                description="Run a notebook's learner code and exercises (what compute-sanitizer wraps).")
    p.add_argument("notebook")
    p.add_argument("--report", help="where to write the JSON report")
    p.add_argument("--cells-only", action="store_true", help="execute the setup and solution cells only")
    p.add_argument("--device", choices=("cuda", "cpu"), help="where to run the checks (default: the GPU)")
    args = p.parse_args(argv)
    data = run(Path(args.notebook).resolve(), Path(args.report) if args.report else None, args.cells_only,
               args.device)
    if not args.report:
        print(json.dumps({k: v for k, v in data.items() if k != "cell_sources"}, indent=1))
    return 0


# ------------------------------------------------------------------ finding compute-sanitizer

def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, in $CUDA_HOME/bin or $CUDA_PATH/bin, in /usr/local/cuda/bin, or from
    NVIDIA's pip wheel (nvidia-cuda-sanitizer-api)."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    places = [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    places.append(Path("/usr/local/cuda/bin"))
    for place in places:
        candidate = place / "compute-sanitizer"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        if not base.is_dir():
            continue
        for candidate in sorted(base.glob("*sanitizer*/**/compute-sanitizer")):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def unavailable_reason() -> str | None:
    """One line on why sanitizing cannot run here and what still works, or None when it can."""
    from .device import gpu_or_reason

    ok, why = gpu_or_reason()
    if not ok:
        return (f"cannot sanitize here: {why}, and compute-sanitizer checks kernels while they run on an NVIDIA "
                "GPU. What still works here: `ladder check NOTEBOOK` grades as usual (chapters 5 and 6 on the CPU, "
                "through Triton's interpreter), and `ladder compile NOTEBOOK` checks that CUDA kernels compile.")
    if find_sanitizer() is None:
        return ("cannot sanitize here: compute-sanitizer was not found (looked on PATH, in $CUDA_HOME/bin, "
                "$CUDA_PATH/bin and /usr/local/cuda/bin, and for the nvidia-cuda-sanitizer-api wheel); it comes "
                "with the CUDA toolkit, or `pip install nvidia-cuda-sanitizer-api-cu12`. Everything else works: "
                "`ladder check NOTEBOOK` grades as usual.")
    return None


class SanitizerUnavailable(LadderError):
    """No GPU, or no compute-sanitizer: the message says which, and what still works."""


def sanitizer_version(sanitizer: str) -> str:
    try:
        out = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown version"
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    return lines[-1] if lines else "unknown version"


# --------------------------------------------------------------------- the command line, the env

def build_command(tool: str, sanitizer: str, notebook: Path, report: Path, log: Path,
                  python: str = sys.executable) -> list[str]:
    """compute-sanitizer with one tool, wrapping the runner on one notebook."""
    if tool not in TOOLS:
        raise LadderError(f"unknown sanitizer tool {tool!r}: choose from {', '.join(TOOLS)}")
    cmd = [sanitizer, "--tool", tool,
           "--log-file", str(log),               # the report, apart from the program's own output
           "--error-exitcode", str(ERROR_EXITCODE),
           "--print-limit", str(PRINT_LIMIT),
           "--require-cuda-init", "no",          # a notebook with nothing written may never touch the GPU
           "--leak-check", "no"]                 # the grader's own tensors outlive the checks: not leaks
    if tool == "memcheck":
        cmd += ["--padding", "512"]              # a gap after each allocation: overruns land in it
    return cmd + [python, "-m", "grader.sanitize", str(notebook), "--report", str(report)]


def sanitize_env(triton_cache: Path, base: dict | None = None) -> dict:
    """The runner's environment: caching allocators off, line info on, Triton on the GPU."""
    env = dict(os.environ if base is None else base)
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"   # each tensor its own cudaMalloc (CuPy: the runner)
    env["LADDER_LINEINFO"] = "1"                  # -lineinfo for CUDA C (the runner adds it too)
    env["CUDA_LAUNCH_BLOCKING"] = "1"             # errors surface at the launch that caused them
    env["TRITON_CACHE_DIR"] = str(triton_cache)   # fresh: cached kernels carry other files' line info
    env["PYTHONUNBUFFERED"] = "1"
    for name in ("TRITON_INTERPRET", "TRITON_DISABLE_LINE_INFO", "LADDER_FORCE_NO_GPU"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


# ------------------------------------------------------------------------- parsing the log

@dataclass
class Location:
    function: str
    file: str | None = None
    line: int | None = None


@dataclass
class Finding:
    tool: str
    category: str        # "memory", "race", "barrier", "device" (other device errors), "api" (a CUDA call failed)
    severity: str        # "error" or "warning"
    kind: str            # the sanitizer's headline, e.g. "Invalid __global__ write of size 4 bytes"
    kernel: str | None = None
    locations: list[Location] = field(default_factory=list)
    accesses: list[str] = field(default_factory=list)   # racecheck: "Write", "Read" of each location
    thread: str | None = None
    block: str | None = None
    details: list[str] = field(default_factory=list)
    count: int = 1       # hazards (racecheck) or repeats of the same error at the same place
    # Filled in by map_to_learner: where in the learner's code, and that line's text.
    where: str | None = None
    code: str | None = None
    line: int | None = None
    file: str | None = None
    sites: list[dict] = field(default_factory=list)      # racecheck: each access in the learner's code
    exercises: list[str] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return self.category != "api"


@dataclass
class ParsedLog:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)        # sanitizer lines that are not errors in kernels
    error_summary: int | None = None                     # "ERROR SUMMARY: N errors"
    hazard_summary: tuple[int, int] | None = None        # racecheck: (errors, warnings)


_PREFIX = "========="
_HEX_AT = re.compile(r"^(?P<func>.+?)\+0x[0-9a-fA-F]+(?: in (?P<file>\S.*?):(?P<line>\d+))?$")
_OLD_AT = re.compile(r"^0x[0-9a-fA-F]+ in (?:(?P<file>[^:\s][^:]*?):(?P<line>\d+):)?(?P<func>.+)$")
_HAZARDS = re.compile(r"\s*\[(?P<n>[\d,]+) hazards?\]\s*$")
_ACCESS = re.compile(r"(?P<access>Read|Write|Atomic|Barrier|Async\w*)\s+access at (?P<loc>.+)$", re.I)
_THREAD_AT = re.compile(r"(?P<access>Read|Write|Atomic)\s+Thread\s+\((?P<thread>[^)]*)\)\s+at (?P<loc>.+)$", re.I)
_BY_THREAD = re.compile(r"by thread \((?P<thread>[^)]*)\) in block \((?P<block>[^)]*)\)")
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(?P<n>[\d,]+) errors?")
_IN_BLOCK = re.compile(r"in block \((?P<block>[^)]*)\)")
# A failed CUDA call that means a kernel crashed (launch failure, illegal address, ...).
_CRASH = re.compile(r"LaunchFailure|IllegalAddress|MisalignedAddress|IllegalInstruction|Assert|error 7(?:0\d|1\d)",
                    re.I)
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:.*?\((?P<e>\d+) errors?, (?P<w>\d+) warnings?\)")
_HARDWARE = ("illegal", "misaligned", "out-of-range", "stack overflow", "invalid pc", "malloc/free", "assert",
             "uninitialized", "hardware exception", "exception")


def parse_location(text: str) -> Location | None:
    """`kernel+0x70 in file.cu:12` (CUDA 12 and later), `kernel+0x70` (no line info), or the older
    `0x70 in file.cu:12:kernel` / `0x70 in kernel`."""
    text = _HAZARDS.sub("", text.strip())
    m = _OLD_AT.match(text)
    if m:
        return Location(m["func"].strip(), m["file"], int(m["line"]) if m["line"] else None)
    m = _HEX_AT.match(text)
    if m:
        return Location(m["func"].strip(), m["file"], int(m["line"]) if m["line"] else None)
    return None


def short_name(function: str) -> str:
    """`void ns::kern<int>(float *, int)` -> `kern`; `vector_add` stays `vector_add`."""
    name, depth = "", 0
    for ch in function:
        if ch == "(" and depth == 0 and name:
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            name += ch
    name = name.strip().split()[-1] if name.strip() else function
    return name.split("::")[-1]


def _blocks(log: str) -> list[list[str]]:
    """Group the log's lines: a headline (one space after the prefix) and its indented details."""
    blocks: list[list[str]] = []
    for raw in log.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        rest = raw[len(_PREFIX):]
        if not rest.strip():
            blocks.append([])             # a blank line: the end of a block
            continue
        indent = len(rest) - len(rest.lstrip(" "))
        if indent <= 1 or not blocks or not blocks[-1]:
            blocks.append([rest.strip()])
        else:
            blocks[-1].append(rest.strip())
    return [b for b in blocks if b]


def _classify(head: str) -> tuple[str, str] | None:
    """(category, severity) of a headline, or None when it is not an error in a kernel or a call."""
    low = head.lower()
    severity = "warning" if low.startswith(("warning", "warn")) else "error"
    if "race reported" in low or "hazard detected" in low:
        return "race", severity
    if "barrier error" in low or low.startswith("invalid arguments") or "synccheck" in low:
        return "barrier", severity
    if low.startswith("invalid __") or low.startswith("invalid ") and " of size " in low:
        return "memory", "error"
    if low.startswith("program hit") or "on cuda api call" in low:
        return "api", "error"
    return None


def parse_log(log: str, tool: str) -> ParsedLog:
    """Everything compute-sanitizer reported: errors in kernels, failed CUDA calls, its summaries."""
    parsed = ParsedLog()
    for block in _blocks(log):
        head, body = block[0], block[1:]
        m = _SUMMARY.search(head)
        if m and "not printed" not in head:
            parsed.error_summary = int(m["n"].replace(",", ""))
            continue
        if m:   # "ERROR SUMMARY: N errors were not printed ..."
            parsed.notes.append(head)
            continue
        m = _RACE_SUMMARY.search(head)
        if m:
            parsed.hazard_summary = (int(m["e"]), int(m["w"]))
            continue
        if head.startswith(("COMPUTE-SANITIZER", "LEAK SUMMARY")):
            continue
        kind = _classify(head)
        has_location = any(l.startswith("at ") for l in body) or " access at " in head
        if kind is None and has_location:
            low = head.lower()
            kind = ("device", "error") if any(w in low for w in _HARDWARE) or tool != "racecheck" else None
        if kind is None:
            parsed.notes.append(" ".join(block)[:300])
            continue
        parsed.findings.append(_finding(tool, kind, head, body))
    return parsed


def _finding(tool: str, kind: tuple[str, str], head: str, body: list[str]) -> Finding:
    category, severity = kind
    clean = re.sub(r"^(error|warning|warn)\s*:\s*", "", head, flags=re.I).strip()
    f = Finding(tool, category, severity, clean)
    frames: list[Location] = []
    hazards = 0
    # racecheck's headline names the first access: "Race reported between Write access at K+0x10 in f.cu:12".
    for line in [head, *body]:
        n = _HAZARDS.search(line)
        m = _ACCESS.search(line)
        if m and category == "race":
            loc = parse_location(m["loc"])
            if loc:
                frames.append(loc)
                f.accesses.append(m["access"].capitalize())
            if n:
                hazards += int(n["n"].replace(",", ""))
            continue
        m = _THREAD_AT.search(line)
        if m:
            loc = parse_location(m["loc"])
            if loc:
                frames.append(loc)
                f.accesses.append(m["access"].capitalize())
                f.thread = f.thread or m["thread"]
            continue
        if line is head:
            m = _IN_BLOCK.search(line)
            if m:
                f.block = m["block"]
            continue
        if line.startswith("at "):
            loc = parse_location(line[3:])
            if loc:
                frames.append(loc)
            continue
        if line.startswith("Device Frame:"):
            loc = parse_location(line[len("Device Frame:"):])
            if loc:
                frames.append(loc)
            continue
        m = _BY_THREAD.search(line)
        if m:
            f.thread, f.block = m["thread"], m["block"]
            continue
        if line.startswith(("Saved host backtrace", "Host Frame", "in /", "in ")) or not line:
            continue
        if len(f.details) < 3:
            f.details.append(line)
    if category == "race":
        f.kind = "race between " + " and ".join(dict.fromkeys(a.lower() for a in f.accesses)) + " accesses" \
            if f.accesses else f.kind
        hazard_word = re.search(r"Potential (\w+) hazard", clean)
        if hazard_word:
            f.kind = f"{hazard_word.group(1)} hazard"
    f.locations = frames
    f.count = hazards or 1
    # The kernel is the outermost frame: the last device frame, else where the error happened.
    kernel_frames = [l for l in frames if l.function]
    if kernel_frames:
        f.kernel = short_name(kernel_frames[-1].function if category != "race" else kernel_frames[0].function)
    return f


# ---------------------------------------------------------------- back to the learner's lines

def _cell_offsets(manifest: dict) -> dict[str, tuple[str, int]]:
    """For each CUDA kernel: (cell file, line offset of its source's first line) when a cell holds it."""
    found = {}
    for name, k in manifest.get("cuda_kernels", {}).items():
        source = k.get("source") or ""
        if not source.strip():
            continue
        for cell_file, text in manifest.get("cell_sources", {}).items():
            pos = text.find(source)
            if pos >= 0:
                found[name] = (cell_file, text.count("\n", 0, pos))
                break
    return found


def _grade_ids(manifest: dict) -> dict[str, str]:
    return {c["file"]: c["grade_id"] for c in manifest.get("cells", [])}


class LearnerCode:
    """The learner's code as the runner saw it: CUDA kernels' sources and the notebook's cells."""

    def __init__(self, manifest: dict):
        self.manifest = manifest
        self.cuda = manifest.get("cuda_kernels", {})
        self.cuda_files = {k["file"]: name for name, k in self.cuda.items()}
        self.cells = manifest.get("cell_sources", {})
        self.offsets = _cell_offsets(manifest)
        self.grade_ids = _grade_ids(manifest)

    def site(self, loc: Location) -> dict | None:
        """{"file", "line", "where", "code"} when `loc` is in the learner's code, else None."""
        if not loc.file or loc.line is None:
            return None
        base = os.path.basename(loc.file)
        if base in self.cuda_files:
            name = self.cuda_files[base]
            lines = (self.cuda[name].get("source") or "").splitlines()
            where = f"{self.cuda[name].get('where') or f'the source of `{name}`'} line {loc.line}"
            if name in self.offsets:
                cell_file, offset = self.offsets[name]
                where += f" (cell '{self.grade_ids.get(cell_file, cell_file)}', line {offset + loc.line})"
        elif base in self.cells:
            lines = self.cells[base].splitlines()
            where = f"cell '{self.grade_ids.get(base, base)}', line {loc.line}"
        else:
            return None
        code = lines[loc.line - 1].strip() if 0 < loc.line <= len(lines) else None
        return {"file": base, "line": loc.line, "where": where, "code": code}


def map_to_learner(finding: Finding, manifest: dict | LearnerCode) -> None:
    """Point the finding at the learner's own lines: .where/.code/.file/.line from the first frame in
    their code; for races, .sites holds every access that is in their code."""
    code = manifest if isinstance(manifest, LearnerCode) else LearnerCode(manifest)
    accesses = finding.accesses + [""] * (len(finding.locations) - len(finding.accesses))
    for access, loc in zip(accesses, finding.locations):
        site = code.site(loc)
        if site is None:
            continue
        if finding.where is None:
            finding.file, finding.line, finding.where, finding.code = site["file"], site["line"], site["where"], \
                site["code"]
        if access:
            finding.sites.append({"access": access.lower(), **site})
    if finding.kernel:
        finding.exercises = [f"{e['key']} {e['title']}" for e in code.manifest.get("exercises", [])
                             if finding.kernel in e.get("kernels", [])]


def learner_kernels(manifest: dict) -> set[str]:
    return set(manifest.get("cuda_kernels", {})) | set(manifest.get("triton_kernels", {}))


def group_findings(findings: list[Finding]) -> list[Finding]:
    """One entry per problem: the same kind of error, in the same kernel, at the same lines."""
    groups: dict[tuple, Finding] = {}
    for f in findings:
        key = (f.category, f.kind, f.kernel, tuple((l.file, l.line) for l in f.locations[:2]))
        if key in groups:
            groups[key].count += f.count
        else:
            groups[key] = f
    return list(groups.values())


# --------------------------------------------------------------------------------- the parent

@dataclass
class ToolRun:
    tool: str
    status: str           # "clean", "errors", "timed-out", "crashed", "sanitizer-failed"
    seconds: float
    exit_code: int | None
    errors: int           # errors the sanitizer counted (its summary), or findings parsed
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    exercises: list[dict] = field(default_factory=list)
    stopped: str | None = None
    output_tail: str = ""
    cells: list[dict] = field(default_factory=list)   # the notebook's cells that did not run cleanly

    @property
    def passed(self) -> bool:
        return self.status == "clean"

    @property
    def reason(self) -> str | None:
        """The grader's stable reason code for this run's verdict (None when clean)."""
        return {"clean": None, "errors": f"sanitizer-{self.tool}", "timed-out": "timed-out"}.get(self.status,
                                                                                               "crashed")


@dataclass
class NotebookSanitized:
    path: str
    chapter: str | None
    tools: list[ToolRun] = field(default_factory=list)
    skipped_tools: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(t.passed for t in self.tools)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = self.passed
        for raw, t in zip(d["tools"], self.tools):
            raw["passed"], raw["reason"] = t.passed, t.reason
        return d


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def run_tool(tool: str, sanitizer: str, notebook: Path, workdir: Path, env: dict,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> ToolRun:
    """One compute-sanitizer run of one tool over one notebook, parsed."""
    stem = f"{notebook.stem}.{tool}"
    report, log = workdir / f"{stem}.report.json", workdir / f"{stem}.log"
    for p in (report, log):
        p.unlink(missing_ok=True)
    cmd = build_command(tool, sanitizer, notebook, report, log)
    start = time.perf_counter()
    timed_out = False
    proc = subprocess.Popen(cmd, cwd=str(notebook.parent), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the sanitizer and the runner it started: our group
        except ProcessLookupError:
            pass
        output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    text = log.read_text(errors="replace") if log.exists() else ""
    manifest = json.loads(report.read_text()) if report.exists() else {}
    return interpret(tool, text, manifest, proc.returncode, output or "", seconds, timed_out, timeout_s)


def interpret(tool: str, log: str, manifest: dict, exit_code: int | None, output: str, seconds: float,
              timed_out: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S) -> ToolRun:
    """Turn one run's log, report and exit status into a ToolRun."""
    parsed = parse_log(log, tool)
    code = LearnerCode(manifest)
    for f in parsed.findings:
        map_to_learner(f, code)
    findings = group_findings(parsed.findings)
    failing = [f for f in findings if f.failing]
    if not failing:   # no error in a kernel could be read, but a CUDA call says a kernel crashed
        failing = [f for f in findings if f.category == "api" and _CRASH.search(f.kind)]
    if parsed.error_summary is not None:
        counted = parsed.error_summary
    elif parsed.hazard_summary is not None:
        counted = sum(parsed.hazard_summary)
    else:
        counted = sum(f.count for f in failing)
    run = ToolRun(tool, "clean", seconds, exit_code, counted, findings, parsed.notes,
                  manifest.get("exercises", []), manifest.get("stopped"), _tail(output),
                  [c for c in manifest.get("cells", []) if c.get("outcome") != "ok"])
    if failing:
        run.status = "errors"
    elif timed_out:
        run.status = "timed-out"
        run.stopped = f"timed out after {timeout_s:.0f} s (an endless loop in a kernel, or a very slow launch)"
    elif not manifest:
        run.status = "sanitizer-failed"
        run.stopped = "the runner never started: " + (_tail(log or output, 4).replace("\n", " / ") or "no output")
    elif not manifest.get("finished"):
        run.status = "crashed"
        run.stopped = "the notebook's process died before it finished: " + (_tail(output, 3).replace("\n", " / ")
                                                                           or "no output")
    elif exit_code == ERROR_EXITCODE and not any(f.category == "api" for f in findings):
        run.status = "errors"   # counted by the sanitizer, in a form this parser did not read: show the log
        run.notes.append("compute-sanitizer reported errors this summary could not read; its log ends:\n"
                         + _tail(log, 20))
    return run


def sanitize_notebook(path: Path, sanitizer: str, workdir: Path, env: dict, tools=None,
                      timeout_s: float = DEFAULT_TIMEOUT_S, echo=None) -> NotebookSanitized:
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return NotebookSanitized(str(path), None, error=f"cannot read the notebook: {exc}")
    chapter = chapter_of(nb, path)
    result = NotebookSanitized(str(path), chapter)
    if chapter not in PLANS:
        result.error = (f"not a Kernel Ladder chapter notebook (its setup cell imports no chapter of "
                        f"{', '.join(sorted(PLANS))}): nothing to sanitize")
        return result
    chosen = tools_for(chapter, tools)
    result.skipped_tools = [t for t in TOOLS if t not in chosen]
    for tool in chosen:
        if echo:
            echo(f"  {tool}: running (small sizes, under compute-sanitizer)...")
        result.tools.append(run_tool(tool, sanitizer, path.resolve(), workdir, env, timeout_s))
    ran = [e for t in result.tools for e in t.exercises if e["outcome"] not in ("not-written", "missing")]
    if result.tools and not ran and all(t.status == "clean" for t in result.tools):
        result.error = ("no exercise of this notebook ran (not written yet, or its cell failed), so nothing "
                        "was checked")
    return result


def sanitize(paths: list[Path], tools=None, timeout_s: float = DEFAULT_TIMEOUT_S, as_json: bool = False,
             echo=print) -> int:
    """`ladder check --sanitize`: exit status 0 when every tool is clean on every notebook."""
    why = unavailable_reason()
    if why:
        from .device import gpu_or_reason

        reason = "failed" if gpu_or_reason()[0] else "no-gpu"
        if as_json:
            echo(json.dumps({"schema": SCHEMA, "passed": False, "error": why, "reason": reason, "notebooks": []},
                            indent=2))
            return 2
        exc = SanitizerUnavailable(why)
        exc.reason = reason
        raise exc
    sanitizer = find_sanitizer()
    version = sanitizer_version(sanitizer)
    results = []
    with tempfile.TemporaryDirectory(prefix="ladder-sanitize-") as tmp:
        workdir = Path(tmp)
        env = sanitize_env(workdir / "triton-cache")
        for path in paths:
            if not as_json:
                echo(f"{path}  (compute-sanitizer {version})")
            r = sanitize_notebook(Path(path), sanitizer, workdir, env, tools, timeout_s,
                                  echo=None if as_json else echo)
            results.append(r)
            if not as_json:
                echo(format_notebook(r))
    passed = all(r.passed for r in results)
    if as_json:
        echo(json.dumps({"schema": SCHEMA, "passed": passed, "sanitizer": {"path": sanitizer, "version": version},
                         "notebooks": [r.as_dict() for r in results]}, indent=2))
    elif len(results) > 1:
        echo(f"{sum(r.passed for r in results)} of {len(results)} notebooks clean under compute-sanitizer")
    return 0 if passed else 1


# ---------------------------------------------------------------------------------- printing

def _exercise_lines(run: ToolRun) -> list[str]:
    lines = []
    for e in run.exercises:
        if e["outcome"] == "ok" or (e["stretch"] and e["outcome"] in ("not-written", "missing")):
            continue
        what = {"not-written": "not written yet: not checked", "missing": e.get("message") or "missing",
                "no-gpu": "not run: no GPU", "failed": "failed its check under the sanitizer",
                "raised": "raised an error under the sanitizer"}.get(e["outcome"], e["outcome"])
        lines.append(f"    - {e['key']} {e['title']} ({e['launcher']}): {what}")
        if e["outcome"] in ("failed", "raised") and e.get("message"):
            lines += [f"        {l}" for l in e["message"].splitlines()[:3]]
    return lines


def format_finding(f: Finding) -> list[str]:
    head = f"    ✗ {f.kind}"
    extra = [f"kernel `{f.kernel}`"] if f.kernel else []
    if f.count > 1:
        extra.append(f"{f.count:,} {'hazards' if f.category == 'race' else 'reports'}")
    if f.severity == "warning":
        extra.append("a warning")
    if extra:
        head += f" ({', '.join(extra)})"
    lines = [head]
    unique_sites = list({(site["access"], site["line"], site["file"]): site for site in f.sites}.values())
    if f.category == "race" and unique_sites:
        for site in unique_sites[:3]:
            lines.append(f"        {site['access']} at {site['where']}:")
            if site["code"]:
                lines.append(f"            {site['code']}")
    elif f.where:
        lines.append(f"        at {f.where}:")
        if f.code:
            lines.append(f"            {f.code}")
    elif f.locations:
        loc = f.locations[0]
        place = f"{loc.file}:{loc.line}" if loc.file else "no line information"
        lines.append(f"        at {loc.function} ({place})")
    if f.thread or f.block:
        lines.append(f"        thread ({f.thread}) of block ({f.block})" if f.block else f"        thread ({f.thread})")
    lines += [f"        {d}" for d in f.details[:2]]
    if f.exercises:
        lines.append(f"        launched by: {', '.join(f.exercises)}")
    return lines


def format_tool(run: ToolRun) -> list[str]:
    checked = [f"{e['key']} {e['launcher']}" for e in run.exercises if e["outcome"] == "ok"]
    failing = [f for f in run.findings if f.failing] or \
        [f for f in run.findings if f.category == "api" and _CRASH.search(f.kind)]
    if run.status == "clean":
        what = f"checked {', '.join(checked)}" if checked else "no exercise ran"
        lines = [f"  {run.tool}: clean ({what}; {run.seconds:.0f} s)"]
    elif run.status == "errors":
        n = max(run.errors, len(failing))
        lines = [f"  {run.tool}: {n:,} error{'s' if n != 1 else ''} reported ({run.seconds:.0f} s)"]
        for f in failing[:SHOWN_PER_TOOL]:
            lines += format_finding(f)
        if len(failing) > SHOWN_PER_TOOL:
            lines.append(f"    ... and {len(failing) - SHOWN_PER_TOOL} more kinds of error (--json lists them all)")
        if not failing:
            lines += [f"    {n}" for n in run.notes[-1:]]
    else:
        lines = [f"  {run.tool}: {run.status.replace('-', ' ')}: {run.stopped}"]
        if run.status != "timed-out" and run.output_tail:
            lines += [f"    | {l}" for l in run.output_tail.splitlines()[-6:]]
    if run.stopped and run.status in ("clean", "errors"):
        lines.append(f"    ({run.stopped})")
    api = [f for f in run.findings if f.category == "api"]
    if api and run.status != "clean":
        lines.append(f"    CUDA calls that failed (often a consequence of the above): {api[0].kind}")
    lines += _exercise_lines(run)
    return lines


def format_notebook(r: NotebookSanitized) -> str:
    lines = []
    if r.error and not r.tools:
        return f"  ! {r.error}"
    for cell in (r.tools[0].cells if r.tools else []):
        if cell["outcome"] == "raised":
            lines.append(f"  ! cell '{cell['grade_id']}' raised {cell['message']}")
    for run in r.tools:
        lines += format_tool(run)
    if r.skipped_tools and r.chapter in TRITON_CHAPTERS:
        lines.append(f"  {', '.join(r.skipped_tools)}: not run for Triton kernels (Triton places their shared "
                     "memory and barriers itself); ask for them with --tool")
    if r.error:
        lines.append(f"  ! {r.error}")
    lines.append(f"  {'CLEAN' if r.passed else 'PROBLEMS FOUND' if not r.error else 'NOT CHECKED'}")
    return "\n".join(lines)


if __name__ == "__main__":
    code = runner_main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: after memcheck ends a kernel the CUDA context is gone, and library
    # destructors that touch it could crash the process after the report is safely written.
    os._exit(code)
