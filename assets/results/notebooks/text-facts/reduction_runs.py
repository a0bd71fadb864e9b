"""Chapter 7's worked reductions run again and again: the solution notebook's `setup` and `reduce-src` cells,
then its `reduce-measure` cell (ch07.measure_reductions: each sum checked against float64, then timed with
grader.harness.timing.bench) RUNS times in this process. Each run's GB/s per version is appended to OUT (JSON),
so that several processes can add to one record:

    python3 assets/results/notebooks/text-facts/reduction_runs.py --out OUT.json [--runs 5]
    python3 assets/results/notebooks/text-facts/reduction_runs.py --summary OUT.json

--summary prints, from the record, each version's range over the runs and each step of the ladder as the range
of its per-run ratio, and says which of the text's readings hold in every run: what chapter 7's reduce-after
may state (tests/notebooks/test_text_facts.py holds the text to the record)."""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
NOTEBOOK = ROOT / "solutions" / "07_reductions" / "07_reductions.ipynb"
# The ladder's steps, each against the rung below it: (label of the step, rung, the rung below).
STEPS = (
    ("the first two fixes (sequential addressing over interleaved, divergent)", "sequential addressing",
     "interleaved, divergent"),
    ("sequential addressing over interleaved with bank conflicts", "sequential addressing",
     "interleaved, bank conflicts"),
    ("the first add during load", "first add during load", "sequential addressing"),
    ("the last warp unrolled", "last warp unrolled", "first add during load"),
    ("shuffles + atomics over sequential addressing", "shuffles + atomics", "sequential addressing"),
    ("the butterfly over __shfl_down_sync", "butterfly + atomics", "shuffles + atomics"),
    ("torch.sum over shuffles + atomics", "torch.sum", "shuffles + atomics"),
)


def measure(out: Path, runs: int) -> None:
    sys.path.insert(0, str(ROOT))
    from grader.learner.cells import grade_id, source

    cells = {grade_id(c): source(c) for c in json.loads(NOTEBOOK.read_text())["cells"]}
    ns: dict = {"__name__": "__main__"}
    for gid in ("setup", "reduce-src"):
        exec(compile(cells[gid], gid, "exec"), ns)
    import torch

    if not torch.cuda.is_available():
        sys.exit("no GPU here: the reductions are timed on a GPU")
    record = json.loads(out.read_text()) if out.is_file() else {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "n": 1 << 26, "runs": []}
    process = 1 + max((r["process"] for r in record["runs"]), default=0)
    for run in range(1, runs + 1):
        print(f"--- process {process}, run {run}", flush=True)
        started = time.perf_counter()
        exec(compile(cells["reduce-measure"], "reduce-measure", "exec"), ns)
        if ns["rates"] is None:
            sys.exit("nothing was measured (no GPU here?): the cell said why above")
        record["runs"].append({"process": process, "run": run, "seconds": round(time.perf_counter() - started, 2),
                               "rates": {k: round(v, 1) for k, v in ns["rates"].items()}})
        out.write_text(json.dumps(record, indent=1))


def summary(path: Path) -> None:
    record = json.loads(path.read_text())
    runs = [r["rates"] for r in record["runs"]]
    print(f"{record['gpu']}, torch {record['torch']}, {len(runs)} runs in "
          f"{len({r['process'] for r in record['runs']})} processes, 2^26 floats\n")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"  {name:<28} {min(values):>7,.0f}-{max(values):,.0f} GB/s")
    print()
    for label, high, low in STEPS:
        ratios = [r[high] / r[low] for r in runs]
        verdict = ("faster in every run" if min(ratios) > 1 else "slower in every run" if max(ratios) < 1
                   else "no faster or slower in every run")
        print(f"  {label:<72} {min(ratios):.2f}-{max(ratios):.2f}x  ({verdict})")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--summary", type=Path)
    args = p.parse_args()
    if args.summary:
        summary(args.summary)
    else:
        measure(args.out, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
