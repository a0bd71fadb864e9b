"""Calibrate chapter 1's pass bars on this GPU: each rung's speedup over torch, RUNS times.

A bar holds when the textbook solution clears it in every run and the previous rung misses it in
every run. This script times the rungs through the same `measure_speed` the graded cells use, with
the kernels taken from the solution notebook and from tests/submissions/ch01/.

    python assets/results/calibrate_ch01.py --runs 10 --out assets/results/ch01-<gpu>.json

Prints a Markdown table; writes every run's figures to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from grader.bars import bar_for  # noqa: E402
from grader.chapters import ch01  # noqa: E402
from grader.device import ceilings, gpu_info, versions  # noqa: E402
from grader.exercise import check_correctness, measure_speed  # noqa: E402
from submissions.build import launchers  # noqa: E402

# (label, submission, cells to execute, launcher name, exercise, bar key, expected verdict)
RUNGS = [
    ("1a one element per thread (naive_1a)", "naive_1a", ["vector-add-solution"], "vector_add",
     ch01.VECTOR_ADD, "1a", "pass"),
    ("1a float4 grid-stride (solution stretch)", "correct", ["vector-add-v4-solution"], "vector_add_v4",
     ch01.VECTOR_ADD, "1a-stretch", "pass"),
    ("1b fused, one kernel (solution)", "correct", ["fused-solution"], "fused_axpb_relu",
     ch01.FUSED, "1b", "pass"),
    ("1b three kernels (three_kernels_1b)", "three_kernels_1b", ["fused-solution"], "fused_axpb_relu",
     ch01.FUSED, "1b", "fail"),
]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()

    info = gpu_info()
    if info is None:
        print("calibration needs a GPU")
        return 2
    ceil = ceilings()
    record = {"gpu": info.name, "cc": info.cc, "versions": versions(),
              "ceilings": {"copy_gbps": ceil.copy_gbps, "fp32_tflops": ceil.fp32_tflops,
                           "fp16_tflops": ceil.fp16_tflops},
              "date": time.strftime("%Y-%m-%d"), "runs": args.runs, "rungs": []}
    ok = True
    for label, sub, cells, fn_name, ex, bar_key, expected in RUNGS:
        fn = launchers("ch01", sub, cells)[fn_name]
        check_correctness(ex, fn, sizes=[1, 31, 1000, 1_000_003], trials=1, verbose=False)
        bar = bar_for(bar_key)
        runs = []
        for _ in range(args.runs):
            r = measure_speed(ex, fn, bar_key)
            runs.append({"speedup": round(r.speedup, 4), "ms": round(r.ms, 5), "baseline_ms": round(r.baseline_ms, 5),
                         "gbps": round(r.gbps(), 1), "pct_of_copy": round(100 * r.gbps() / ceil.copy_gbps, 1),
                         "spread": round(r.comparison.candidate.spread, 4), "rounds": r.comparison.rounds,
                         "others_speedup": {n: round(ms / r.ms, 3) for n, ms in r.others.items()},
                         "size": r.size})
        speedups = [x["speedup"] for x in runs]
        verdicts = ["pass" if s >= bar.bar else "fail" for s in speedups]
        holds = all(v == expected for v in verdicts)
        ok &= holds
        record["rungs"].append({"rung": label, "bar_key": bar_key, "bar": bar.bar, "expected": expected,
                                "holds": holds, "runs": runs})
        print(f"| {label} | {bar.bar:.2f} | {min(speedups):.2f} | {statistics.median(speedups):.2f} | "
              f"{max(speedups):.2f} | {statistics.median(x['gbps'] for x in runs):,.0f} | "
              f"{statistics.median(x['pct_of_copy'] for x in runs):.0f}% | "
              f"{verdicts.count(expected)}/{len(verdicts)} {expected} |", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    print(f"\n{info.name}; copy ceiling {ceil.copy_gbps:,.0f} GB/s; every bar holds: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
