"""The record every issue-19 GPU script keeps: its parts run one after another, each timed, each
failure caught, printed and recorded while the script goes on, and the JSON rewritten after every part,
so that a call cut short at its time limit still brings back what the finished parts measured."""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any, Callable


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
