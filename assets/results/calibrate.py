"""The calibration loop every chapter's script shares: each rung's speedup over torch, RUNS times.

A bar holds when the textbook solution clears it in every run and the previous rung misses it in
every run. Rungs are timed through the same `measure_speed` the graded cells use, with kernels
taken from the solution notebook and from tests/submissions/chNN/.

A chapter script lists its rungs and calls `main(chapter, rungs)`:
    python assets/results/calibrate_chNN.py --runs 10 --out assets/results/chNN-<gpu>/calibration.json
It prints a Markdown table and writes every run's figures to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from grader.harness.bars import bar_for  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.harness.ceilings import ceilings  # noqa: E402
from grader.harness.exercise import Exercise, check_correctness, measure_speed  # noqa: E402
from submissions.build import launchers  # noqa: E402


@dataclass
class Rung:
    label: str                 # "2 padded tile (solution)"
    submission: str            # a module of tests/submissions/<chapter>/, or "correct"
    cells: list[str]           # solution-cell grade_ids to execute, in order
    launcher: str              # the name the cells define
    exercise: Exercise
    bar_key: str
    expected: str              # "pass" or "fail"
    sizes: list[Any] | None = None        # correctness sizes checked once first (default: visible)
    wrap: Callable[[Callable], Callable] | None = None   # adapt a launcher (e.g. bind causal=True)
    extra: dict = field(default_factory=dict)


def run_rung(chapter: str, rung: Rung, runs: int) -> dict:
    fn = launchers(chapter, rung.submission, rung.cells)[rung.launcher]
    if rung.wrap:
        fn = rung.wrap(fn)
    check_correctness(rung.exercise, fn, sizes=rung.sizes, trials=1, verbose=False)
    bar = bar_for(rung.bar_key)
    out = []
    for _ in range(runs):
        r = measure_speed(rung.exercise, fn, rung.bar_key)
        out.append({"speedup": round(r.speedup, 4), "ms": round(r.ms, 5), "baseline_ms": round(r.baseline_ms, 5),
                    "baseline": r.baseline_name, "rate": round(r.rate(), 2), "unit": r.unit,
                    "pct_of_ceiling": round(r.pct_of_ceiling() or 0.0, 1), "ceiling": r.ceiling_name,
                    "spread": round(r.comparison.candidate.spread, 4), "rounds": r.comparison.rounds,
                    "others_speedup": {n: round(ms / r.ms, 3) for n, ms in r.others.items()}, "size": r.size})
    speedups = [x["speedup"] for x in out]
    verdicts = ["pass" if s >= bar.bar else "fail" for s in speedups]
    holds = all(v == rung.expected for v in verdicts)
    print(f"| {rung.label} | {bar.bar:.2f} | {min(speedups):.3f} | {statistics.median(speedups):.3f} | "
          f"{max(speedups):.3f} | {statistics.median(x['rate'] for x in out):,.1f} {out[0]['unit']} | "
          f"{statistics.median(x['pct_of_ceiling'] for x in out):.0f}% | "
          f"{verdicts.count(rung.expected)}/{len(verdicts)} {rung.expected} |", flush=True)
    return {"rung": rung.label, "bar_key": rung.bar_key, "bar": bar.bar, "expected": rung.expected,
            "holds": holds, "runs": out, **rung.extra}


def main(chapter: str, rungs: list[Rung], argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", help="comma-separated substrings: calibrate only rungs whose label contains one")
    args = p.parse_args(argv)

    info = gpu_info()
    if info is None:
        print("calibration needs a GPU")
        return 2
    ceil = ceilings()
    record = {"chapter": chapter, "gpu": info.name, "cc": info.cc, "versions": versions(),
              "ceilings": {"copy_gbps": ceil.copy_gbps, "fp32_tflops": ceil.fp32_tflops,
                           "fp16_tflops": ceil.fp16_tflops},
              "date": time.strftime("%Y-%m-%d"), "runs": args.runs, "rungs": []}
    print(f"{info.name}: copy {ceil.copy_gbps:,.0f} GB/s, fp32 {ceil.fp32_tflops:.1f} TFLOP/s, "
          f"fp16 {ceil.fp16_tflops:.0f} TFLOP/s\n")
    print("| rung | bar | min | median | max | median rate | % of ceiling | verdicts |")
    print("|---|---|---|---|---|---|---|---|")
    selected = [r for r in rungs if not args.only or any(s in r.label for s in args.only.split(","))]
    for rung in selected:
        record["rungs"].append(run_rung(chapter, rung, args.runs))
    ok = all(r["holds"] for r in record["rungs"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    print(f"\n{info.name}; every bar holds: {ok}")
    return 0 if ok else 1
