"""Grade the same correct submission N times through the isolated grading path; report the spread.

    python assets/results/timing-integrity/stability.py --runs 10 --out OUT.json NOTEBOOK:CELL [NOTEBOOK:CELL ...]

Each run is a full graded check of one speed cell (`grader.isolation.isolate.check_cell`: a fresh verifier and
a fresh worker). The speedup is read from the report the check prints. The requirement it checks:
speedups within ±5% of their median, and no verdict flip while the ratio is more than 10% from the bar.
"""

from __future__ import annotations

import argparse
import base64
import json
import pickle
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from grader.isolation import isolate  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402

SPEEDUP = re.compile(r"speedup\s+([0-9.]+)x")
BAR = re.compile(r"\(bar ([0-9.]+)x")


def _speed(v: isolate.Verdict) -> tuple[float | None, float | None]:
    """The speedup and bar of a graded speed cell: from the SpeedResult the cell assigned (full
    precision), else from the report it printed (two decimals)."""
    if v.values:
        values = pickle.loads(base64.b64decode(v.values))
        for value in values.values():
            if hasattr(value, "speedup") and hasattr(value, "bar"):
                return float(value.speedup), float(value.bar)
    text = v.stdout + "\n" + v.message
    speedups = [float(x) for x in SPEEDUP.findall(text)]
    bars = [float(x) for x in BAR.findall(text)]
    return (speedups[-1] if speedups else None), (bars[-1] if bars else None)


def _summarize(report: dict, runs: dict) -> list[str]:
    rows = []
    for target, rs in runs.items():
        s = [r["speedup"] for r in rs if r["speedup"] is not None]
        med = statistics.median(s) if s else float("nan")
        dev = max(abs(x / med - 1) for x in s) * 100 if s else float("nan")
        bar = next((r["bar"] for r in rs if r["bar"]), None)
        report["cells"][target] = {"runs": rs, "median": med, "max_dev_pct": dev,
                                   "verdicts": sorted({r["passed"] for r in rs})}
        nb, cell = target.rsplit(":", 1)
        rows.append(f"| {Path(nb).stem} `{cell}` | {bar} | {med:.3f} | {min(s, default=float('nan')):.3f} | "
                    f"{max(s, default=float('nan')):.3f} | ±{dev:.1f}% | {sum(r['passed'] for r in rs)}/{len(rs)} |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("targets", nargs="+", help="NOTEBOOK:GRADE_ID")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    info = gpu_info()
    report = {"gpu": info.name if info else None, "versions": versions(), "runs": args.runs, "cells": {}}
    targets = [t.rsplit(":", 1) for t in args.targets]
    runs: dict[str, list] = {f"{nb}:{cell}": [] for nb, cell in targets}
    # Round-robin over the cells, the report rewritten after every round: a run cut short by a time
    # limit still leaves every cell with the same number of gradings.
    for i in range(args.runs):
        for nb, cell in targets:
            t0 = time.perf_counter()
            v = isolate.check_cell(nb, cell)
            speedup, bar = _speed(v)
            runs[f"{nb}:{cell}"].append({"passed": v.passed, "reason": v.reason, "speedup": speedup, "bar": bar,
                                         "seconds": round(time.perf_counter() - t0, 1)})
            print(f"{nb}:{cell} run {i + 1}: {runs[f'{nb}:{cell}'][-1]}", flush=True)
        rows = _summarize(report, runs)
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"\n{report['gpu']}, {args.runs} gradings each (isolated path)\n")
    print("| cell | bar | median | min | max | max deviation | passed |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
