"""The process Nsight Compute wraps: `python -m grader.profiling.target NOTEBOOK --exercise KEY --report FILE`.

It runs the notebook's learner code by grader.learner's rules (the setup cell, then every solution
cell, from the saved file), builds the exercise's inputs at its graded size from the
chapter's data, calls the learner's launcher twice outside any profiled range (Triton compiles and
autotunes there), then once inside the NVTX range `ladder-learner`, which is all ncu profiles
(`--nvtx --nvtx-include ladder-learner/`): torch's own kernels that make the inputs fall outside it.

A launch slower than SLOW_MS is too slow to replay ncu's ~40 passes at the graded size: the target
then profiles the exercise's largest visible size instead, and the report says so. What happened goes
to the report file as JSON, which grader.profiling.ncu reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .. import chapters, config
from ..harness import correctness
from ..learner import cells as nbcells
from ..learner.code import NAMESPACE, run_cell

RANGE = "ladder-learner"
SLOW_MS = 400.0   # ~40 replays of a 400 ms launch: half a minute of profiling for one kernel


def plan_for(chapter: str, exercise: str, launcher: str | None = None):
    """The chapter's SANITIZE entry for `exercise`: which launcher the notebook defines for it, with
    which trailing arguments. The graded launcher unless `launcher` names a stretch goal's."""
    steps = [s for s in chapters.module(chapter).SANITIZE if s.exercise.key == exercise]
    if launcher:
        steps = [s for s in steps if s.launcher == launcher]
    else:
        steps = [s for s in steps if not s.stretch] or steps
    if not steps:
        known = sorted({s.exercise.key for s in chapters.module(chapter).SANITIZE})
        raise LookupError(f"chapter {chapter[2:].lstrip('0')} has no exercise {exercise!r}"
                          + (f" with a launcher `{launcher}`" if launcher else "") + f"; it has {', '.join(known)}")
    return steps[0]


def call_launcher(fn, ex, inputs, out, trailing):
    return fn(*ex.split((*inputs, out)), *trailing)   # the output as the learner receives it (Exercise.split)


def learner_launcher(notebook: Path, exercise: str, launcher: str | None, report: dict):
    """The notebook's launcher for `exercise`, its cells run by grader.learner's rules: (plan, function), or
    None with the reason in `report` ("outcome", "message")."""
    config.start_quietly()
    nb = json.loads(notebook.read_text())
    chapter = nbcells.chapter_of(nb, notebook)
    if chapter not in chapters.names():
        report.update(outcome="no-chapter", message=f"{notebook.name} is not a chapter notebook of this course")
        return None
    try:
        step = plan_for(chapter, exercise, launcher)
    except LookupError as exc:
        report.update(outcome="no-exercise", message=str(exc))
        return None
    report.update(chapter=chapter, launcher=step.launcher)
    ns: dict = {"__name__": NAMESPACE}
    for gid, source in nbcells.learner_cells(nb):
        problems = run_cell(gid, source, ns)
        if problems and not any("NotImplementedError" in p for p in problems):
            report.update(outcome="cell-failed", message=problems[0])
            return None
    fn = ns.get(step.launcher)
    if not callable(fn):
        report.update(outcome="missing", message=f"the notebook defines no function `{step.launcher}`")
        return None
    return step, fn


def size_of(ex, size_text: str | None):
    """The size to run at: `size_text` (JSON) or the exercise's graded size."""
    size = json.loads(size_text) if size_text else ex.speed_size()
    return tuple(size) if isinstance(size, list) else size


def run(notebook: Path, exercise: str, launcher: str | None, size_text: str | None) -> dict:
    report: dict = {"notebook": str(notebook), "exercise": exercise, "outcome": "ok", "message": None}
    found = learner_launcher(notebook, exercise, launcher, report)
    if found is None:
        return report
    step, fn = found
    ex = step.exercise

    import torch
    size = size_of(ex, size_text)
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    try:
        inputs, out = ex.make_inputs(size, gen, "cuda"), ex.make_output(size, "cuda")
        start = time.perf_counter()
        call_launcher(fn, ex, inputs, out, step.trailing)          # compiles, autotunes
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call_launcher(fn, ex, inputs, out, step.trailing)
        torch.cuda.synchronize()
        once_ms = (time.perf_counter() - t0) * 1e3
        report["warmup_s"] = round(time.perf_counter() - start, 2)
        if once_ms > SLOW_MS and not size_text:
            small = max(ex.visible_sizes, key=lambda s: ex.bytes_moved(s))
            report["smaller"] = (f"one launch took {once_ms:,.0f} ms at the graded size {ex.describe_size(size)}; "
                                 f"ncu replays it about 40 times, so this profile is at {ex.describe_size(small)} "
                                 f"instead (the largest visible size)")
            size = small
            del inputs, out
            inputs, out = ex.make_inputs(size, gen, "cuda"), ex.make_output(size, "cuda")
            call_launcher(fn, ex, inputs, out, step.trailing)
            torch.cuda.synchronize()
        correctness.poison(out)     # poisoned: the profiled launch writes every element, or leaves NaN (or bytes of all ones)
        torch.cuda.nvtx.range_push(RANGE)
        call_launcher(fn, ex, inputs, out, step.trailing)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    except NotImplementedError:
        return {**report, "outcome": "not-written", "message": f"`{ex.signature}` is not written yet"}
    except Exception as exc:  # noqa: BLE001 - the learner's launcher may raise anything
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {**report, "outcome": "raised", "message": f"{type(exc).__name__}: {first}"}
    report.update(size=ex.describe_size(size), once_ms=round(once_ms, 3),
                  flops=float(ex.flops(size)) if ex.flops else None, bytes_moved=float(ex.bytes_moved(size)),
                  ceiling=ex.ceiling)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.profiling.target")
    p.add_argument("notebook")
    p.add_argument("--exercise", required=True)
    p.add_argument("--launcher")
    p.add_argument("--size", help="JSON, e.g. [4096, 4096, 4096]; default: the graded size")
    p.add_argument("--report", required=True)
    args = p.parse_args(argv)
    data = run(Path(args.notebook).resolve(), args.exercise, args.launcher, args.size)
    Path(args.report).write_text(json.dumps(data, indent=1))
    return 0 if data["outcome"] == "ok" else 3


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
