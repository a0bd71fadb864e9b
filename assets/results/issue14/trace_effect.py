"""Issue 14 on a GPU: does device-side tracing move a graded ratio, or a verdict? For every graded
speed cell's passing rung (the calibration scripts' rungs, in this process), time it RUNS times with
tracing and RUNS times without (`LADDER_TRACE=0`), interleaved, and record each speedup, each verdict,
the ratio of the untraced call time to the traced batch's device busy time (the margin of
`enforce_traced_timing`), and one traced report.

    python assets/results/issue14/trace_effect.py --runs 10 --out OUT.json [--chapters 1,2,3]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))            # calibrate.py and the chapter scripts
sys.path.insert(0, str(HERE.parents[2]))

from calibrate import launchers  # noqa: E402
from grader.cuda import trace  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import check_correctness, measure_speed  # noqa: E402


def set_tracing(on: bool) -> None:
    os.environ["LADDER_TRACE"] = "1" if on else "0"
    trace.reset()


def one(rung, fn, traced: bool) -> dict:
    set_tracing(traced)
    t = time.perf_counter()
    r = measure_speed(rung.exercise, fn, rung.bar_key)
    k = r.kernels
    row = {"traced": traced, "speedup": round(r.speedup, 4), "ms": round(r.ms, 5), "baseline_ms": round(r.baseline_ms, 5),
           "passed": r.passed, "seconds": round(time.perf_counter() - t, 1)}
    if k is not None and k.note is None:
        row.update(kernel_ms=round(k.kernel_ms, 5), busy_ms=round(k.busy_ms, 5), launches=k.launches,
                   call_over_busy=round(r.ms / k.busy_ms, 4) if k.busy_ms else None,
                   kernels=[(x.name[:60], x.launches, round(x.ms, 5)) for x in k.rows])
    elif k is not None:
        row["note"] = k.note
    return row, r


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--chapters", default="1,2,3,4,5,6")
    args = p.parse_args()
    info = gpu_info()
    record = {"gpu": info.name, "cc": info.cc, "versions": versions(), "date": time.strftime("%Y-%m-%d"),
              "runs": args.runs, "cells": []}
    print(f"{info.name}\n")
    print("| cell | rung | bar | traced median (min–max) | untraced median (min–max) | moved | verdicts traced / untraced | untraced call ÷ traced busy (min) |")
    print("|---|---|---|---|---|---|---|---|")
    for ch in args.chapters.split(","):
        module = importlib.import_module(f"calibrate_ch0{ch}")
        for rung in module.RUNGS:
            bar = bar_for(rung.bar_key)
            if rung.expected != "pass" or not bar.graded:
                continue
            fn = launchers(f"ch0{ch}", rung.submission, rung.cells)[rung.launcher]
            if rung.wrap:
                fn = rung.wrap(fn)
            check_correctness(rung.exercise, fn, sizes=rung.sizes, trials=1, verbose=False)
            rows, report = [], None
            for i in range(args.runs):
                for traced in ((True, False) if i % 2 == 0 else (False, True)):
                    row, r = one(rung, fn, traced)
                    rows.append(row)
                    if traced and report is None:
                        report = r.report()
            tr = [x["speedup"] for x in rows if x["traced"]]
            un = [x["speedup"] for x in rows if not x["traced"]]
            moved = statistics.median(tr) / statistics.median(un) - 1
            margins = [x["call_over_busy"] for x in rows if x.get("call_over_busy")]
            cell = {"rung": rung.label, "bar_key": rung.bar_key, "bar": bar.bar, "rows": rows, "report": report,
                    "traced_median": statistics.median(tr), "untraced_median": statistics.median(un),
                    "moved_pct": round(100 * moved, 2),
                    "verdicts_traced": sum(x["passed"] for x in rows if x["traced"]),
                    "verdicts_untraced": sum(x["passed"] for x in rows if not x["traced"]),
                    "min_call_over_busy": min(margins) if margins else None}
            record["cells"].append(cell)
            print(f"| {rung.bar_key} | {rung.label} | {bar.bar} | {statistics.median(tr):.3f} ({min(tr):.3f}–{max(tr):.3f}) | "
                  f"{statistics.median(un):.3f} ({min(un):.3f}–{max(un):.3f}) | {100 * moved:+.2f}% | "
                  f"{cell['verdicts_traced']}/{len(tr)} / {cell['verdicts_untraced']}/{len(un)} | "
                  f"{cell['min_call_over_busy']} |", flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(record, indent=1))
    for cell in record["cells"]:
        print(f"\n### {cell['bar_key']}: {cell['rung']} (one traced report)\n```\n{cell['report']}\n```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
