"""The bars under trusted timing: every calibrated rung's speed-up, N times, as the verdict now takes it (the
asking process's clock, grader.isolation.trusted) beside what the events recorded where the calls ran say (the
figure verdicts rested on before), with the zero-call overhead, the cap, the events' gap, the traced bound and
the SM clock of each timing.

    python assets/results/timing-integrity/measure.py --runs 10 --out OUT.json [--isolated] [--chapters 1,5]

In-process (the default) the learner's launcher runs in this process, as in a notebook and `ladder check`;
with --isolated it runs in a grader worker (grader.isolation.remote), as `ladder grade` runs it: the requests
then cross a process boundary and copy their tensors into the worker's own memory and back. Rungs are the
calibration rungs of assets/results/calibrate_chNN.py. Prints a Markdown table per rung; writes every run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "assets" / "results")]

from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import check_correctness, measure_speed  # noqa: E402
from submissions.build import launchers, load  # noqa: E402


def _remote(chapter: str, rung):
    """The rung's launcher in a grader worker: the cells a graded check loads there (the setup cell and the
    answer cells before the notebook's last graded cell), from the rung's submission built as a notebook."""
    import tempfile

    from grader.isolation.remote import RemoteFunction, WorkerHandle
    from grader.learner import cells as nbcells
    from submissions.build import build

    sub = load(chapter, rung.submission)
    nb = build(chapter, sub.CHAPTER_DIR, rung.submission, Path(tempfile.mkdtemp()) / "rung.ipynb")
    handle = WorkerHandle("spawn")
    loaded = handle.load(nbcells.learner_cells(nb), {})
    if loaded.problems:
        raise RuntimeError(f"{rung.label}: {loaded.problems}")
    return handle, RemoteFunction(handle, rung.launcher)


def run(chapter: str, rung, runs: int, isolated: bool) -> dict:
    handle = None
    if isolated and rung.wrap is None:
        handle, fn = _remote(chapter, rung)
    else:   # a wrapped launcher (chapter 6's causal flag) is timed where it is wrapped
        fn = launchers(chapter, rung.submission, rung.cells)[rung.launcher]
        if rung.wrap:
            fn = rung.wrap(fn)
    try:
        check_correctness(rung.exercise, fn, sizes=rung.sizes, trials=1, verbose=False)
        bar = bar_for(rung.bar_key)
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            r = measure_speed(rung.exercise, fn, rung.bar_key)
            rec = r.as_record()
            rec["event_ratio"] = round(r.baseline_ms / r.events_ms, 4) if r.events_ms else None
            rec["integrity"] = r.integrity
            rec["seconds"] = round(time.perf_counter() - t0, 2)
            out.append(rec)
    finally:
        if handle is not None:
            handle.close()
    new = [x["ratio"] for x in out]
    old = [x["event_ratio"] for x in out if x["event_ratio"]]
    verdicts = ["pass" if s >= bar.bar else "fail" for s in new]
    old_verdicts = ["pass" if s >= bar.bar else "fail" for s in old]
    moved = statistics.median(new) / statistics.median(old) - 1 if old else float("nan")
    gaps = [g for x in out for g in (x["integrity"]["event_gap_min"], x["integrity"]["event_gap_max"]) if g is not None]
    bounds = [x["integrity"]["bound"] for x in out if x["integrity"].get("bound")]
    slack = [b["untraced_ms"] / b["busy_ms"] for b in bounds if b["busy_ms"]]
    print(f"| {rung.label} | {bar.bar:.2f} | {min(new):.3f}-{max(new):.3f} | {statistics.median(new):.3f} | "
          f"{statistics.median(old) if old else float('nan'):.3f} | {100 * moved:+.2f}% | "
          f"{verdicts.count(rung.expected)}/{len(verdicts)} {rung.expected} "
          f"({old_verdicts.count(rung.expected)}/{len(old_verdicts)} by events) | "
          f"{100 * min(gaps, default=0):+.2f}..{100 * max(gaps, default=0):+.2f}% | "
          f"{min(slack, default=float('nan')):.3f} | {sum(x['throttled'] for x in out)}/{len(out)} |", flush=True)
    return {"rung": rung.label, "bar_key": rung.bar_key, "bar": bar.bar, "expected": rung.expected,
            "holds": all(v == rung.expected for v in verdicts), "moved": moved, "isolated": handle is not None,
            "runs": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--isolated", action="store_true")
    p.add_argument("--chapters", default="1,2,3,4,5,6,7,8")
    p.add_argument("--only", help="comma-separated substrings of rung labels")
    p.add_argument("--budget-s", type=float, default=1e9, help="stop starting rungs after this many seconds")
    args = p.parse_args(argv)
    info = gpu_info()
    if info is None:
        print("this needs a GPU")
        return 2
    start = time.perf_counter()
    record = {"gpu": info.name, "versions": versions(), "date": time.strftime("%Y-%m-%d"), "runs": args.runs,
              "isolated": args.isolated, "rungs": []}
    print("| rung | bar | trusted range | trusted median | events median | moved | verdicts | events' gap | "
          "untraced/busy min | throttled |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for number in args.chapters.split(","):
        chapter = f"ch{int(number):02d}"
        rungs = importlib.import_module(f"calibrate_{chapter}").RUNGS
        for rung in rungs:
            if args.only and not any(s in rung.label for s in args.only.split(",")):
                continue
            if "stretch" in rung.bar_key:
                continue
            if time.perf_counter() - start > args.budget_s:
                print(f"(budget spent: {rung.label} not measured)")
                continue
            try:
                record["rungs"].append(run(chapter, rung, args.runs, args.isolated))
            except Exception as exc:  # noqa: BLE001 - one rung's failure is a finding, not the end
                print(f"| {rung.label} | failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]} |", flush=True)
                record["rungs"].append({"rung": rung.label, "error": f"{type(exc).__name__}: {exc}"[:3000]})
            args.out.write_text(json.dumps(record, indent=1, default=str))
    print(f"\n{info.name}; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
