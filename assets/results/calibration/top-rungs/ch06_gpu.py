"""The top rungs, chapter 6: the graded backward pass (exercise 6b) and the tuned forward (stretch 1b) on a GPU.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch06_gpu.py --out DIR          # on the H100
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch06_gpu.py --out DIR --dry    # CPU plumbing

What it does, in order of value, writing DIR/ch06_gpu.json after every part (a run cut short keeps what it
measured) and DIR/ch06_gpu.md with the table at the end. Expected times on an H100 (compiles included):

1. the GPU, torch and Triton versions                                                        (~2 s)
2. 6b correctness through the chapter's own checks: `check_backward` at the visible sizes and at the hidden
   ones (D = 16, 32, 64, 128; N = 1, 2, 17 ... 4097), causal and not; `check_backward_gradcheck` (the fp16
   forward's out and lse, then torch.autograd.gradcheck and float64 gradients, on the GPU in float64)
                                                        (~40-60 s: about 40 kernel compiles, fp64 included)
3. 6b memory: the solution within the O(N) budget, `backward_stores_p` rejected; the two CPU exploit entries
   (torch autograd inside the backward, causal ignored) rejected on the GPU too              (~15 s)
4. bar 6b, 10 runs each through parts.py's `run_rung` (the `measure_speed` path of the speed cell):
   the solution (expected pass) and the backward that stores P in Triton (`backward_stores_p`, the rung
   below; expected fail), both against autograd's backward through naive attention; SDPA's backward is
   in each run's `others_speedup`                                                        (~50-70 s)
5. the tuned forward (`attention_fast`): correctness, then one timing per case (D = 64, 128; causal and
   not) against SDPA for it and for the exercise-6 solution, and the autotuner's choices    (~20 s)
6. the bars of stretch 1b (ch06.fast_bar_key; one bar, "6-stretch-fast", before they were split by case),
   --fast-runs runs (default 10) of each of the four cases, tuned forward then the
   exercise-6 solution (the rung below)                                       (~2 s a run: ~160 s at 10)

Parts 1-5 take about 130-150 s; part 6 runs while --budget (default 150 s) lasts, so at the defaults it
is mostly skipped: run it on its own with `--only fast-runs` (about 160 s). Each part catches, prints and
records its own errors and the script goes on; parts that would start after --budget seconds are
skipped, and the JSON says so.

--dry: no GPU. The Triton interpreter (TRITON_INTERPRET=1) runs the same kernels at the checks' CPU sizes
for correctness, the gradient check and the CPU exploit entries; nothing is timed or measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
DRY = "--dry" in sys.argv
if DRY:  # before torch, Triton or the grader are imported: they read these once
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["LADDER_FORCE_NO_GPU"] = "1"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402

from parts import Rung, run_rung  # noqa: E402
from parts import Record  # noqa: E402
from grader.chapters import ch06  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.errors import LadderError  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import measure_speed  # noqa: E402
from submissions.build import launchers  # noqa: E402

BWD_CELLS = ["backward-solution"]
FWD_CELLS = ["attention-solution", "stretch-fast-solution"]
RUNG_SIZES_BWD = [(1, 2, 128, 64), (1, 1, 333, 64)]
RUNG_SIZES_FWD = [(1, 2, 128, 64), (1, 1, 333, 128)]


def free_gpu_memory() -> None:
    """After each part: the naive backwards' graphs (several GiB at the timing size) and torch's cache."""
    if torch.cuda.is_available():
        ch06._NAIVE_BACKWARDS.clear()
        torch.cuda.empty_cache()


def environment() -> dict:
    info = gpu_info()
    env = {"versions": versions(), "gpu": info.name if info else None,
           "capability": list(info.capability) if info else None}
    print(json.dumps(env, indent=1), flush=True)
    return env


def verdict(check, *args) -> dict:
    """A check's outcome: passed, or the reason and the first line of its message."""
    try:
        check(*args)
        return {"passed": True}
    except LadderError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {"passed": False, "reason": getattr(exc, "reason", None), "type": type(exc).__name__,
                "message": first[:400]}


def expect(found: dict, passed: bool, reason: str | None = None) -> dict:
    found["as_expected"] = found["passed"] == passed and (reason is None or found.get("reason") == reason)
    print(f"  {'OK' if found['as_expected'] else 'UNEXPECTED'}: {found}", flush=True)
    return found


def backward_correctness(bwd: dict) -> dict:
    fn, fwd = bwd["attention_backward"], bwd["attention_forward"]
    out = {"visible": expect(verdict(ch06.check_backward, fn), True),
           "hidden": expect(verdict(lambda f: ch06.check_backward(f, ch06.BACKWARD_HIDDEN), fn), True),
           "gradcheck": expect(verdict(ch06.check_backward_gradcheck, fwd, fn), True)}
    return out


def backward_memory_and_exploits() -> dict:
    out = {}
    if not DRY:
        sol = launchers("ch06", "correct", BWD_CELLS)["attention_backward"]
        try:
            found = ch06.check_backward_memory(sol)
            out["solution_memory"] = {f"{ch06.describe(s)} causal={c}": used for (s, c), used in found.items()}
        except LadderError as exc:
            out["solution_memory"] = {"passed": False, "reason": exc.reason, "message": str(exc)[:600]}
            print(f"  UNEXPECTED: the solution failed the memory check: {exc}", flush=True)
        stores = launchers("wrong", "backward_stores_p", BWD_CELLS)["attention_backward"]
        out["backward_stores_p"] = expect(verdict(ch06.check_backward_memory, stores), False, "memory")
    for name, reason in (("backward_torch_autograd", "library-compute"), ("backward_noncausal_only", "wrong-result")):
        fn = launchers("wrong", name, BWD_CELLS)["attention_backward"]
        out[name] = expect(verdict(ch06.check_backward, fn), False, reason)
    return out


def autotune_report(kernel) -> dict:
    out = {}
    for key, config in getattr(kernel, "cache", {}).items():
        out[str(key)] = str(config)
        print(f"  autotune {key}: {config}", flush=True)
    return out


def fast_forward_once(fwd: dict) -> dict:
    out = {"correct": expect(verdict(lambda f: ch06.check_attention(f, trials=1), fwd["attention_fast"]), True)}
    out["hidden"] = expect(verdict(lambda f: ch06.check_attention(f, ch06.HIDDEN_SIZES, trials=1),
                                   fwd["attention_fast"]), True)
    if DRY:
        return out
    for d, causal in ch06.FAST_CASES:
        ex = ch06.fast_exercise(d, causal)
        key = ch06.fast_bar_key(d, causal)
        bar = bar_for(key).bar
        for name in ("attention_fast", "attention"):
            r = measure_speed(ex, ch06.bind(fwd[name], causal), key)
            out[f"{name} D={d} causal={causal}"] = {"speedup_vs_sdpa": round(r.speedup, 4), "ms": round(r.ms, 5),
                                                    "rate": round(r.rate(), 1), "bar": bar, "passes": r.speedup >= bar}
            print(f"  {name} D={d} causal={causal}: {r.speedup:.3f}x SDPA ({r.rate():.0f} TFLOP/s)", flush=True)
    out["autotune"] = autotune_report(fwd["flash_attention_fast_kernel"])
    return out


def bwd_rungs() -> list[tuple[str, Rung]]:
    wrap = lambda f: ch06.bind_backward(f, False)  # noqa: E731
    return [
        ("ch06", Rung("6b backward, P recomputed from lse (solution)", "correct", BWD_CELLS, "attention_backward",
                      ch06.BACKWARD, "6b", "pass", RUNG_SIZES_BWD, wrap=wrap)),
        ("wrong", Rung("6b backward with P stored in memory by Triton (backward_stores_p)", "backward_stores_p",
                       BWD_CELLS, "attention_backward", ch06.BACKWARD, "6b", "fail", RUNG_SIZES_BWD, wrap=wrap)),
    ]


def fast_rungs() -> list[tuple[str, Rung]]:
    rungs = []
    for d, causal in ch06.FAST_CASES:
        wrap = lambda f, c=causal: ch06.bind(f, c)  # noqa: E731
        ex = ch06.fast_exercise(d, causal)
        rungs.append(("ch06", Rung(f"6-stretch-fast D={d} causal={causal} (attention_fast)", "correct", FWD_CELLS,
                                   "attention_fast", ex, ch06.fast_bar_key(d, causal), "pass", RUNG_SIZES_FWD, wrap=wrap)))
        rungs.append(("ch06", Rung(f"6-stretch-fast D={d} causal={causal} (exercise 6 solution)", "correct", FWD_CELLS,
                                   "attention", ex, ch06.fast_bar_key(d, causal), "fail", RUNG_SIZES_FWD, wrap=wrap)))
    return rungs


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: interpreter correctness at small sizes, no timing")
    p.add_argument("--runs", type=int, default=10, help="runs of each 6b rung")
    p.add_argument("--fast-runs", type=int, default=10, help="runs of each stretch 1b rung")
    p.add_argument("--budget", type=float, default=150.0, help="seconds after which no new part starts")
    p.add_argument("--only", default="", help="comma-separated: env,backward,memory,6b,fast,fast-runs")
    args = p.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only  # noqa: E731
    rec = Record(args.out, "assets/results/calibration/top-rungs/ch06_gpu.py", DRY, after_part=free_gpu_memory)
    budget = args.budget

    rec.data["environment"] = rec.part("environment", environment, budget)
    bwd = rec.part("load the backward solution", lambda: launchers("ch06", "correct", BWD_CELLS), budget)
    if bwd and want("backward"):
        rec.part("6b correctness: visible, hidden, gradcheck", lambda: backward_correctness(bwd), budget)
    if want("memory"):
        rec.part("6b memory and exploit entries", backward_memory_and_exploits, budget)

    fwd = rec.part("load the forward solutions", lambda: launchers("ch06", "correct", FWD_CELLS), budget)
    if not DRY:
        print("\n| rung | bar | min | median | max | median rate | % of ceiling | verdicts |\n|---|---|---|---|---|---|---|---|")
        if want("6b"):
            for chapter, rung in bwd_rungs():
                row = rec.part(rung.label, lambda c=chapter, r=rung: run_rung(c, r, args.runs), budget)
                if row:
                    rec.data["rows"].append(row)
        if fwd and want("fast"):
            rec.part("tuned forward: correctness and one timing per case", lambda: fast_forward_once(fwd), budget)
        if want("fast-runs"):
            for chapter, rung in fast_rungs():
                row = rec.part(rung.label, lambda c=chapter, r=rung: run_rung(c, r, args.fast_runs), budget)
                if row:
                    rec.data["rows"].append(row)
    else:
        rec.data["skipped"]["timing"] = "dry run: nothing timed or measured"
        if fwd and want("fast"):
            rec.part("tuned forward: correctness (interpreter)", lambda: fast_forward_once(fwd), budget)
        if bwd:
            rec.part("notebook cells: 6b speed and memory say no GPU",
                     lambda: {"speed": verdict(ch06.check_backward_speed, bwd["attention_backward"]),
                              "memory": verdict(ch06.check_backward_memory, bwd["attention_backward"])}, budget)

    write_table(rec)
    rec.save()
    print(f"\nwrote {args.out / 'ch06_gpu.json'} and ch06_gpu.md after {rec.elapsed():.0f} s")
    return 0 if not rec.data["errors"] else 1


def write_table(rec: Record) -> None:
    env = rec.data.get("environment") or {}
    vers = env.get("versions") or {}
    lines = [f"# Chapter 6, the top rungs: backward (6b) and tuned forward ({env.get('gpu') or 'no GPU (dry run)'}; "
             f"Triton {vers.get('triton', '?')}, torch {vers.get('torch', '?')})", "",
             "| rung | bar | runs | min | median | max | verdicts (expected) | others (median x) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rec.data["rows"]:
        s = sorted(r["speedup"] for r in row["runs"])
        got = sum((x >= row["bar"]) == (row["expected"] == "pass") for x in s)
        others = {}
        for r in row["runs"]:
            for name, x in r.get("others_speedup", {}).items():
                others.setdefault(name, []).append(x)
        shown = ", ".join(f"{n} {sorted(v)[len(v) // 2]:.3f}" for n, v in others.items()) or "-"
        lines.append(f"| {row['rung']} | {row['bar']:.2f} | {len(s)} | {s[0]:.3f} | {s[len(s) // 2]:.3f} | {s[-1]:.3f} "
                     f"| {got}/{len(s)} {row['expected']} | {shown} |")
    once = (rec.data["parts"].get("tuned forward: correctness and one timing per case") or {}).get("result") or {}
    for name, r in once.items():
        if isinstance(r, dict) and "speedup_vs_sdpa" in r:
            lines.append(f"| {name} vs SDPA (1 run) | {r['bar']:.2f} | 1 | {r['speedup_vs_sdpa']:.3f} | "
                         f"{r['speedup_vs_sdpa']:.3f} | {r['speedup_vs_sdpa']:.3f} | {'pass' if r['passes'] else 'fail'} | - |")
    checks = {name: part.get("result") for name, part in rec.data["parts"].items()
              if name.startswith("6b correctness") or name.startswith("6b memory") or name.startswith("notebook")}
    lines += ["", f"checks: {json.dumps(checks, default=str)}", f"errors: {rec.data['errors'] or 'none'}",
              f"skipped: {rec.data['skipped'] or 'none'}", f"elapsed: {rec.elapsed():.0f} s"]
    text = "\n".join(lines) + "\n"
    (rec.out / "ch06_gpu.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    sys.exit(main())
