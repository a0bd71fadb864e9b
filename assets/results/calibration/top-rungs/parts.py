"""What the top rungs' GPU scripts share: the timing of one rung, RUNS times, through the graded
`measure_speed` (`run_rung`), and the record every script keeps: its parts run one after another, each timed, each
failure caught, printed and recorded while the script goes on, and the JSON rewritten after every part,
so that a call cut short at its time limit still brings back what the finished parts measured."""

from __future__ import annotations

import json
import statistics
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.harness.bars import bar_for
from grader.harness.exercise import Exercise, check_correctness, measure_speed
from submissions.build import launchers


class Record:
    def __init__(self, out: Path, script: str, dry: bool, budget_s: float | None = None,
                 after_part: Callable[[], None] | None = None, **extra: Any):
        self.out, self.start = out, time.time()
        self.json_path = out / f"{Path(script).stem}.json"
        self.budget_s = budget_s           # no part starts after this many seconds (None: no limit)
        self.after_part = after_part       # e.g. free the GPU memory a part kept
        self.data = {"script": script, "dry": dry, "parts": {}, "errors": {}, "skipped": {}, "rows": [], **extra}
        out.mkdir(parents=True, exist_ok=True)

    def elapsed(self) -> float:
        return time.time() - self.start

    def save(self) -> None:
        self.data["elapsed_s"] = round(self.elapsed(), 1)
        self.json_path.write_text(json.dumps(self.data, indent=1, default=str))

    def part(self, name: str, fn: Callable[[], Any], budget: float | None = None):
        budget = self.budget_s if budget is None else budget
        if budget is not None and self.elapsed() > budget:
            self.data["skipped"][name] = f"not started: {self.elapsed():.0f} s elapsed, budget {budget:.0f} s"
            print(f"\n--- {name}: skipped (time budget)", flush=True)
            self.save()
            return None
        print(f"\n--- {name} ({self.elapsed():.0f} s)", flush=True)
        t0 = time.time()
        try:
            result = fn()
            self.data["parts"][name] = {"seconds": round(time.time() - t0, 1), "result": result}
            return result
        except Exception as exc:  # noqa: BLE001 - record, print, go on to the next part
            self.data["errors"][name] = f"{type(exc).__name__}: {exc}"
            print(f"ERROR in {name}: {type(exc).__name__}: {exc}", flush=True)
            traceback.print_exc()
            return None
        finally:
            print(f"    ({name}: {time.time() - t0:.1f} s)", flush=True)
            self.save()
            if self.after_part is not None:
                self.after_part()


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
