"""Run every graded test cell a correct/ submission expects to pass, in-process, and time its speed cells.

    PYTHONPATH=.:tests python tests/submissions/correct/_measure.py [--runs 3] [--only ch03,ch05_5b]
        [--reference] [--out FILE.json]
    PYTHONPATH=.:tests python tests/submissions/correct/_measure.py --compile    # NVRTC only, no GPU

For each module of tests/submissions/correct/ (or those whose name starts with one of --only), the
script executes the chapter's solution cells in notebook order with the submission's cells in place
(the way `submissions.build.launchers` does), then the source of each test cell in EXPECT["cells"],
taken from the solution notebook, hidden tests included. Speed cells run --runs times; every speedup
the graded check measured is recorded, whatever the verdict. --reference also times the
instructor's solution (tests/submissions/chNN/correct.py) for the same exercises, on the same GPU.

This is a quick in-process check for the authors of these submissions, not the grader: the graded
path (a fresh worker process per check, guard bands, re-checks during timing) is grader/isolation/isolate.py.
Without a GPU, cells that need one fail with NoGPUError and are reported as "no GPU".
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import re
import statistics
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(ROOT), str(ROOT / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

def modules(only: list[str] | None) -> list[str]:
    import submissions.correct as pkg

    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name.startswith("ch"))
    return [n for n in names if not only or any(n.startswith(o) for o in only)]


def notebook_cells(chapter_dir: str) -> list[dict]:
    nb = json.loads(next((ROOT / "solutions" / chapter_dir).glob("*.ipynb")).read_text())
    return nb["cells"]


def grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def run_submission(package: str, name: str, chapter_dir: str, cells: list[str], runs: int) -> dict:
    """Execute the solution cells up to the last expected test cell, then each test cell."""
    import grader.harness.exercise as exercise
    from submissions.build import launchers

    nb = notebook_cells(chapter_dir)
    order = [grade_id(c) for c in nb]
    last = max(order.index(g) for g in cells)
    solution_ids = [grade_id(c) for c in nb[:last] if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    sources = {grade_id(c): "".join(c["source"]) for c in nb}
    chapter_mod = importlib.import_module(f"grader.chapters.ch{chapter_dir[:2]}")
    report: dict = {"submission": f"{package}.{name}", "cells": {}}
    try:
        ns = launchers(package, name, solution_ids)
    except Exception as exc:  # a cell of the submission failed to execute
        report["error"] = f"{type(exc).__name__}: {exc}"
        return report
    ns[f"ch{chapter_dir[:2]}"] = chapter_mod

    recorded: list = []
    real_measure = exercise.measure_speed

    def recording(*args, **kwargs):
        result = real_measure(*args, **kwargs)
        recorded.append(result)
        return result

    exercise.measure_speed = recording
    try:
        for gid in cells:
            entry: dict = {"outcomes": [], "speedups": []}
            for _ in range(runs if gid.endswith("-speed") else 1):   # every graded speed cell is named so
                recorded.clear()
                t0 = time.time()
                try:
                    exec(compile(sources[gid], f"<{name} {gid}>", "exec"), ns)
                    outcome = "pass"
                except Exception as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    outcome = ("no GPU" if type(exc).__name__ == "NoGPUError"
                               else f"FAIL {type(exc).__name__}: {first[:300]}")
                    if not outcome.startswith(("no GPU", "FAIL CheckFailed")):
                        entry.setdefault("traceback", traceback.format_exc()[-3000:])
                entry["outcomes"].append(outcome)
                entry["speedups"] += [round(r.speedup, 4) for r in recorded]
                if recorded:
                    entry["bar"] = recorded[-1].bar
                entry.setdefault("seconds", []).append(round(time.time() - t0, 1))
            report["cells"][gid] = entry
    finally:
        exercise.measure_speed = real_measure
    return report


def compile_all(names: list[str]) -> bool:
    """Build each submission's notebook and compile every CUDA source in it through NVRTC (no GPU)."""
    import tempfile

    from grader.errors import LadderError
    from grader.cuda.nvrtc import compile_for_archs
    from grader.learner.cells import cuda_sources
    from submissions.build import build

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            sub = importlib.import_module(f"submissions.correct.{name}")
            nb = build("correct", sub.CHAPTER_DIR, name, Path(tmp) / f"{name}.ipynb")
            sources, stray = cuda_sources(nb)
            # The kernels this submission's own cells load: load_kernel(NAME_SRC, "kernel", ...).
            loaded = {var: kernel for cell in sub.CELLS.values()
                      for var, kernel in re.findall(r'load_kernel\((\w+_SRC),\s*"(\w+)"', cell)}
            own = [(var, src, loaded[var]) for var, src in sources
                   if var in loaded and any(src in cell for cell in sub.CELLS.values())]
            if not own:
                ok = False
                print(f"| {name} | - | no CUDA source of its own found |")
            for var, src, kernel in own:
                try:
                    archs = [c.arch for c in compile_for_archs(src, kernel)]
                    print(f"| {name} | {var} (`{kernel}`) | compiles for {', '.join(archs)} |")
                except LadderError as exc:
                    ok = False
                    print(f"| {name} | {var} (`{kernel}`) | FAILS: {str(exc).splitlines()[0][:200]} |")
            if stray:
                ok = False
                print(f"| {name} | cells {stray} | a __global__ kernel outside a NAME_SRC string |")
    return ok


def summarize(rep: dict) -> str:
    lines = []
    if "error" in rep:
        return f"| {rep['submission']} | (cells did not run) | {rep['error'][:200]} | | |"
    for gid, e in rep["cells"].items():
        ok = sum(o == "pass" for o in e["outcomes"])
        verdict = f"{ok}/{len(e['outcomes'])} pass"
        bad = next((o for o in e["outcomes"] if o != "pass"), "")
        sp = e["speedups"]
        speed = (f"{min(sp):.3f} / {statistics.median(sp):.3f} / {max(sp):.3f} (bar {e.get('bar', 0):.2f}, "
                 f"margin {100 * (min(sp) / e['bar'] - 1):+.0f}%)") if sp and e.get("bar") else ""
        lines.append(f"| {rep['submission']} | {gid} | {verdict} | {speed} | {bad[:160]} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per speed cell (default 3)")
    ap.add_argument("--only", help="comma-separated prefixes of module names (ch03, ch05_5b_minimal, ...)")
    ap.add_argument("--reference", action="store_true", help="also time the instructor's solution")
    ap.add_argument("--out", type=Path, help="write every result as JSON here")
    ap.add_argument("--compile", action="store_true",
                    help="only compile the submissions' CUDA sources through NVRTC (no GPU needed), then exit")
    args = ap.parse_args(argv)
    if args.compile:
        names = [n for n in modules(args.only.split(",") if args.only else None)
                 if n[:4] in ("ch01", "ch02", "ch03", "ch04")]
        print("| submission | source | NVRTC |\n|---|---|---|")
        ok = compile_all(names)
        print(f"\nevery CUDA source compiles: {ok}")
        return 0 if ok else 1

    from grader.cuda.gpu import gpu_info

    info = gpu_info()
    print(f"device: {info.name if info else 'no GPU'}\n")
    print("| submission | cell | verdict | speedup min / median / max | first failure |")
    print("|---|---|---|---|---|")
    reports, all_ok = [], True
    done_reference = set()
    for name in modules(args.only.split(",") if args.only else None):
        sub = importlib.import_module(f"submissions.correct.{name}")
        jobs = [("correct", name)]
        key = (sub.CHAPTER_DIR, tuple(sub.EXPECT["cells"]))
        if args.reference and key not in done_reference:
            done_reference.add(key)
            jobs.insert(0, (f"ch{sub.CHAPTER_DIR[:2]}", "correct"))
        for package, module in jobs:
            rep = run_submission(package, module, sub.CHAPTER_DIR, list(sub.EXPECT["cells"]), args.runs)
            reports.append(rep)
            print(summarize(rep), flush=True)
            if package == "correct":
                all_ok &= "error" not in rep and all(
                    o in ("pass", "no GPU") for e in rep["cells"].values() for o in e["outcomes"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"gpu": info.name if info else None, "reports": reports}, indent=1))
    print(f"\nevery correct/ submission passed every expected cell: {all_ok}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
