"""The process compute-sanitizer wraps: `python -m grader.sanitizer.runner NOTEBOOK --report FILE`.

It runs the notebook's learner code (the `setup` cell, then every nbgrader solution cell, in order,
each under its own file name, by the rules of grader.learner.code), then calls each exercise's launcher
on a few small sizes through `check_correctness(exercise, fn, sizes, trials=1)`, as the chapter's
`SANITIZE` table says. Caching allocators are off (PyTorch's and CuPy's), so a write past the end of
a tensor lands outside any allocation rather than in pooled memory; CUDA C kernels are compiled with
`-lineinfo`, so errors name lines. What it did (cells, kernels and their sources, exercise outcomes)
goes to the report file, as JSON, after every step: grader.sanitizer.report reads it with the
sanitizer's log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from .. import chapters, config
from ..cuda import launches
from ..errors import CheckFailed, NoGPUError
from ..learner import cells as nbcells
from ..learner.code import NAMESPACE
from ..learner.code import run_cell as run_learner_cell


# --------------------------------------------------------------------------- notebook cells

def cell_filename(index: int, grade_id: str) -> str:
    """The file name a cell runs under: Triton's line info, and so the sanitizer's reports, use it."""
    return f"ladder_cell{index:02d}_{re.sub(r'[^A-Za-z0-9_-]', '_', grade_id)}.py"


def learner_cells(nb: dict) -> list[tuple[int, str, str]]:
    """(index, grade_id, source) of the setup cell and every nbgrader solution cell, in order."""
    return [(index, nbcells.grade_id(cell) or f"cell-{index}", nbcells.source(cell))
            for index, cell in enumerate(nb.get("cells", [])) if nbcells.is_learner_cell(cell)]


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


def _watch(report: Report):
    """A launches handler: compile CUDA C with -lineinfo, and note which kernels each exercise launches."""

    def handler(launch: launches.Launch):
        if launch.kind == "cuda":
            kernel = launch.kernel
            if not kernel.compiled:
                if not {"-lineinfo", "--generate-line-info"} & set(kernel.options):
                    kernel.options = (*kernel.options, "-lineinfo")
                report.cuda_kernel(kernel)
            report.launched(kernel.name)
        elif launch.kind == "triton":
            report.triton_kernel(launch.kernel)
        return launch.proceed()

    return handler


_PROBLEM = re.compile(r"line (?P<line>\d+): (?P<type>[\w.]+): (?P<text>.*)", re.S)


def _cell_problem(grade_id: str, problem: str) -> str:
    """A problem grader.learner.code.run_cell met, worded for the report, which names the cell itself:
    "cell fused-solution, line 2: ValueError: my mistake" -> "ValueError (line 2): my mistake"."""
    text = problem.removeprefix(f"cell {grade_id}, ").removeprefix(f"cell {grade_id}: ")
    m = _PROBLEM.fullmatch(text)
    return f"{m['type']} (line {m['line']}): {m['text']}" if m else text


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


def run(notebook: Path, report_path: Path | None = None, cells_only: bool = False,
        device: str | None = None) -> dict:
    """Execute the notebook's learner cells, then each exercise of its chapter's plan (the runner)."""
    _allocators_off()
    config.start_quietly()   # start() neither prints nor measures ceilings here
    # Under a sanitizer no profiler attaches, so the device trace records nothing. A sanitizer run makes no
    # verdict (it reports what its tool found in the kernels the checks ran): a check the trace could not make
    # must not stop the kernels before the tool has seen them.
    os.environ["LADDER_UNCHECKED"] = "full"
    report = Report(report_path, str(notebook))
    nb = json.loads(Path(notebook).read_text())
    chapter = nbcells.chapter_of(nb, notebook)
    report.data["chapter"] = chapter
    report.save()

    from ..cuda.gpu import gpu_or_reason
    from ..harness.exercise import as_learner, check_correctness

    ns: dict = {"__name__": NAMESPACE}
    watch = _watch(report)   # from the first cell on: a kernel a cell compiles gets -lineinfo too
    with launches.intercept(watch):
        for index, gid, source in learner_cells(nb):
            filename = cell_filename(index, gid)
            entry = {"index": index, "grade_id": gid, "file": filename, "outcome": "ok", "message": None}
            report.data["cells"].append(entry)
            report.data["cell_sources"][filename] = source
            problems = run_learner_cell(gid, source, ns, filename=filename)
            launches.install_triton()   # once a cell has imported Triton, its launches are seen too
            if any("NotImplementedError" in p for p in problems):
                entry["outcome"] = "not-written"
            elif problems:  # the learner's cell failed: say so, go on with the others
                entry["outcome"], entry["message"] = "raised", _first_lines(_cell_problem(gid, problems[0]), 3)
            report.save()
    plan = getattr(chapters.module(chapter), "SANITIZE", None) if chapter in chapters.names() else None
    if cells_only or plan is None:
        if plan is None:
            report.data["stopped"] = f"no exercise plan for chapter {chapter!r}"
        report.data["finished"] = True
        report.save()
        return report.data

    has_gpu = gpu_or_reason()[0]
    dev = device or ("cuda" if has_gpu else None)
    report.data["device"] = dev
    with launches.intercept(watch):
        for step in plan:
            ex = step.exercise
            entry = {"key": ex.key, "title": ex.title, "launcher": step.launcher, "stretch": step.stretch,
                     "trailing": list(step.trailing), "sizes": [ex.describe_size(s) for s in step.sizes],
                     "outcome": "ok", "message": None, "kernels": []}
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
                    check_correctness(ex, as_learner(fn, step.launcher).with_trailing(*step.trailing),
                                      list(step.sizes), trials=1, device=dev, verbose=False)
                except NotImplementedError:
                    entry["outcome"] = "not-written"
                except NoGPUError as exc:
                    entry["outcome"], entry["message"] = "no-gpu", _first_lines(exc)
                except CheckFailed as exc:
                    entry["outcome"], entry["message"] = "failed", _first_lines(exc)
                except Exception as exc:  # a fault past the learner's code: report it, carry on
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
    p = argparse.ArgumentParser(prog="python -m grader.sanitizer.runner",
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


if __name__ == "__main__":
    code = runner_main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: after memcheck ends a kernel the CUDA context is gone, and library
    # destructors that touch it could crash the process after the report is safely written.
    os._exit(code)
