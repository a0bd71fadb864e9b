"""Grade the same correct submission N times through the isolated grading path; report the spread.

    python assets/results/stability.py --runs 10 --out OUT.json NOTEBOOK:CELL [NOTEBOOK:CELL ...]

Each run is a full graded check of one speed cell (`grader.isolate.check_cell`: a fresh verifier and
a fresh worker). The speedup is read from the report the check prints. The issue's requirement:
speedups within ±5% of their median, and no verdict flip while the ratio is more than 10% from the bar.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader import isolate  # noqa: E402
from grader.device import gpu_info, versions  # noqa: E402

SPEEDUP = re.compile(r"speedup\s+([0-9.]+)x")
BAR = re.compile(r"\(bar ([0-9.]+)x")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("targets", nargs="+", help="NOTEBOOK:GRADE_ID")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    info = gpu_info()
    report = {"gpu": info.name if info else None, "versions": versions(), "runs": args.runs, "cells": {}}
    rows = []
    for target in args.targets:
        nb, cell = target.rsplit(":", 1)
        runs = []
        for i in range(args.runs):
            t0 = time.perf_counter()
            v = isolate.check_cell(nb, cell)
            text = v.stdout + "\n" + v.message
            speedups = [float(x) for x in SPEEDUP.findall(text)]
            bars = [float(x) for x in BAR.findall(text)]
            runs.append({"passed": v.passed, "reason": v.reason, "speedup": speedups[-1] if speedups else None,
                         "bar": bars[-1] if bars else None, "seconds": round(time.perf_counter() - t0, 1)})
            print(f"{target} run {i + 1}: {runs[-1]}", flush=True)
        s = [r["speedup"] for r in runs if r["speedup"] is not None]
        med = statistics.median(s) if s else float("nan")
        dev = max(abs(x / med - 1) for x in s) * 100 if s else float("nan")
        verdicts = {r["passed"] for r in runs}
        bar = next((r["bar"] for r in runs if r["bar"]), None)
        report["cells"][target] = {"runs": runs, "median": med, "max_dev_pct": dev, "verdicts": sorted(verdicts)}
        rows.append(f"| {Path(nb).stem} `{cell}` | {bar} | {med:.3f} | {min(s):.3f} | {max(s):.3f} | ±{dev:.1f}% "
                    f"| {sum(r['passed'] for r in runs)}/{len(runs)} |")
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"\n{report['gpu']}, {args.runs} gradings each (isolated path)\n")
    print("| cell | bar | median | min | max | max deviation | passed |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
