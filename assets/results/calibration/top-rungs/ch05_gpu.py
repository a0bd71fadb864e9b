"""The top rungs, chapter 5: the Hopper rung (persistent Triton matmul through TMA descriptors) on a GPU.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch05_gpu.py --out DIR     # on the H100
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch05_gpu.py --out DIR --dry   # CPU plumbing

What it does, in order of value, writing DIR/ch05_gpu.json after every part (so a run cut short by a
time limit keeps what it measured) and DIR/ch05_gpu.md with the table at the end:

1. the GPU, torch and Triton versions, and the TMA capability probe's finding here   (~2 s)
2. correctness of the solution's `matmul_tma` on the GPU through the chapter's own check
   (fresh random inputs, float64 reference, the chapter's tolerance, output poisoned): small, odd M,
   non-square, 4096^3 and 8192^3                                                     (~15 s, autotune at
   each new shape included: five configurations, compiled once, then cached)
3. ten timed runs each, as ratios to torch.mm in the same process, through parts.py's `run_rung`
   (the `measure_speed` path of the stretch cell), against the bar "5a-hopper":
   the Hopper rung at 4096^3 and the 5a solution at 4096^3, then both at 8192^3     (~60-80 s)
   and which autotuning configuration won at each size (with the autotuner's timing of every one)
4. the notebook's own stretch cell, `ch05.check_matmul_hopper`, once                 (~8 s)
5. variants, correctness first, then one timing at each size: warp specialisation on the tile loop
   (4-warp configurations; Triton 3.6 compiles a warp-specialised loop for sm_90 only with 4 warps) and
   a flattened tile loop                                                            (~20 s)

About 110-130 s on an H100 in all. Each part catches, prints and records its own errors and the script
goes on; parts that would start after --budget seconds are skipped, and the JSON says so.

--dry: no GPU. The Triton interpreter (TRITON_INTERPRET=1) runs the same kernels at tiny sizes for
correctness; nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
DRY = "--dry" in sys.argv
if DRY:  # before torch, Triton or the grader are imported: they read these once
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["LADDER_FORCE_NO_GPU"] = "1"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]


from parts import Rung, run_rung  # noqa: E402
from parts import Record  # noqa: E402
from grader.chapters import ch05  # noqa: E402
from grader.cuda.gpu import arch_here, gpu_info, versions  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import check_correctness, measure_speed  # noqa: E402
from submissions.build import _solution_sources, launchers, run_cell  # noqa: E402

SIZE_4K, SIZE_8K = ch05.SPEED_SIZES_HOPPER
HOPPER_4K = ch05.HOPPER
HOPPER_8K = replace(ch05.HOPPER, speed_size=lambda: SIZE_8K)
CELLS_5A = ["matmul-solution"]
CELLS_HOPPER = ["matmul-solution", "hopper-solution"]
GPU_SIZES = [(1, 8, 8), (129, 264, 72), (1000, 1024, 328), (384, 640, 1000), (3000, 5000, 2056),
             (4097, 4104, 4096), SIZE_4K, SIZE_8K]
DRY_SIZES = [(1, 8, 8), (40, 24, 136), (130, 264, 72)]
# Each rung is checked once more before it is timed (calibrate.run_rung): two shapes keep the autotuning
# of new shapes (about a second each) short; part 2 checks the rest.
RUNG_SIZES = [(130, 264, 72), (384, 640, 1000)]

LOOP = "for tile in tl.range(tl.program_id(0), grid_m * grid_n, NUM_SMS):"
# Variants of the solution cell: (name, what it changes, [(old, new), ...]). 4-warp configurations for warp
# specialisation: a 128 x 256 fp32 accumulator is 256 registers a thread with 4 warps, too many; and no
# SPLIT_STORE: Triton 3.6's Hopper warp-specialisation pass aborts on its reshape/split ("unsupported op
# type", cross-compiled for sm_90 on a CPU).
WS_CONFIGS = '''TMA_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_STORE": False},
                  num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_STORE": False},
                  num_warps=4, num_stages=3),
]
TUNED_TMA_CONFIGS'''
VARIANTS = [
    ("warp-specialised", "tl.range(..., warp_specialize=True) on the tile loop; 128x128x64, 4 warps, 3 or 4 stages",
     [(LOOP, LOOP.replace("NUM_SMS):", "NUM_SMS, warp_specialize=True):")), ("TMA_CONFIGS = [", "_UNUSED = ["),
      ("TUNED_TMA_CONFIGS", None)]),
    ("flattened", "tl.range(..., flatten=True) on the tile loop (the K loop folded into it); the solution's configs",
     [(LOOP, LOOP.replace("NUM_SMS):", "NUM_SMS, flatten=True):"))]),
]


def variant_source(changes) -> str:
    source = _solution_sources("05_triton_matmul")["hopper-solution"]
    for old, new in changes:
        if new is None:   # the configuration list is replaced by WS_CONFIGS: splice it in once
            head, sep, tail = source.partition("\nTUNED_TMA_CONFIGS")
            source = head + "\n" + WS_CONFIGS + tail
            continue
        if old not in source:
            raise ValueError(f"the solution cell no longer contains {old!r}: update this script")
        source = source.replace(old, new, 1)
    return source


def environment() -> dict:
    info = gpu_info()
    env = {"versions": versions(), "gpu": info.name if info else None,
           "capability": list(info.capability) if info else None, "sm_count": info.sm_count if info else None}
    arch = arch_here()
    if arch is not None:
        from grader.cuda.capabilities import find
        finding = find("TMA", arch)
        env["tma"] = {"arch": arch.name, "present": finding.present, "evidence": finding.evidence}
    print(json.dumps(env, indent=1), flush=True)
    return env


def autotune_report(kernel) -> dict:
    """The configuration the autotuner kept for every (M, N, K) it has seen, and its timings of each."""
    out = {}
    for key, config in getattr(kernel, "cache", {}).items():
        shape = "x".join(str(k) for k in key if isinstance(k, int))
        out[shape] = {"chosen": str(config)}
    timings = getattr(kernel, "configs_timings", None) or {}
    if timings and out:
        last = list(out)[-1]
        out[last]["timings_ms"] = {str(c): [round(float(t), 4) for t in (ts if isinstance(ts, (list, tuple)) else [ts])]
                                   for c, ts in timings.items()}
    for shape, what in out.items():
        print(f"  autotune {shape}: {what['chosen']}", flush=True)
        for c, t in what.get("timings_ms", {}).items():
            print(f"      {t} ms  {c}", flush=True)
    return out


def correctness(fn, sizes) -> dict:
    check_correctness(ch05.HOPPER, fn, sizes=sizes, trials=1)
    return {"sizes": [list(s) for s in sizes], "verdict": "correct"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: interpreter correctness at tiny sizes, no timing")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--budget", type=float, default=135.0, help="seconds after which no new part starts")
    args = p.parse_args(argv)
    rec = Record(args.out, "assets/results/calibration/top-rungs/ch05_gpu.py", DRY)
    budget = args.budget

    rec.data["environment"] = rec.part("environment", environment, budget)
    hop = rec.part("load the solution", lambda: launchers("ch05", "correct", CELLS_HOPPER), budget)
    sizes = DRY_SIZES if DRY else GPU_SIZES
    if hop:
        rec.part("correctness of matmul_tma", lambda: correctness(hop["matmul_tma"], sizes), budget)
        rec.part("autotune choice after correctness", lambda: autotune_report(hop["matmul_tma_kernel"]), budget)

    if not DRY:
        rungs = [
            Rung("5a-hopper persistent TMA (solution) at 4096^3", "correct", CELLS_HOPPER, "matmul_tma", HOPPER_4K,
                 "5a-hopper", "pass", RUNG_SIZES),
            Rung("5a solution (grouped, autotuned) at 4096^3", "correct", CELLS_5A, "matmul", HOPPER_4K,
                 "5a-hopper", "fail", RUNG_SIZES),
            Rung("5a-hopper persistent TMA (solution) at 8192^3", "correct", CELLS_HOPPER, "matmul_tma", HOPPER_8K,
                 "5a-hopper", "pass", RUNG_SIZES),
            Rung("5a solution (grouped, autotuned) at 8192^3", "correct", CELLS_5A, "matmul", HOPPER_8K,
                 "5a-hopper", "fail", RUNG_SIZES),
        ]
        print("\n| rung | bar | min | median | max | median rate | % of ceiling | verdicts |\n|---|---|---|---|---|---|---|---|")
        for rung in rungs:
            row = rec.part(rung.label, lambda r=rung: run_rung("ch05", r, args.runs), budget)
            if row:
                rec.data["rows"].append(row)
        if hop:
            rec.part("notebook stretch cell: ch05.check_matmul_hopper",
                     lambda: [{"size": r.size, "speedup": round(r.speedup, 4), "passed": r.passed}
                              for r in (ch05.check_matmul_hopper(hop["matmul_tma"]) or ())], budget)
            rec.part("autotune choice of the solution", lambda: autotune_report(hop["matmul_tma_kernel"]), budget)
    else:
        rec.data["skipped"]["timing"] = "dry run: nothing timed"
        if hop:
            rec.part("notebook stretch cell: ch05.check_matmul_hopper (interpreter)",
                     lambda: ch05.check_matmul_hopper(hop["matmul_tma"]), budget)

    for name, what, changes in VARIANTS:
        def one(changes=changes, what=what):
            ns = launchers("ch05", "correct", CELLS_5A)
            run_cell(variant_source(changes), ns, f"<ch05 hopper variant {name}>")
            fn = ns["matmul_tma"]
            out = {"what": what, **correctness(fn, sizes)}
            if not DRY:
                bar = bar_for("5a-hopper").bar
                for ex in (HOPPER_4K, HOPPER_8K):
                    r = measure_speed(ex, fn, "5a-hopper")
                    out[r.size] = {"speedup": round(r.speedup, 4), "ms": round(r.ms, 5), "rate": round(r.rate(), 1),
                                   "bar": bar, "passes": r.speedup >= bar}
                    print(f"  {name} at {r.size}: {r.speedup:.3f}x torch.mm ({r.rate():.0f} TFLOP/s)", flush=True)
                out["autotune"] = autotune_report(ns["matmul_tma_kernel"])
            return out
        rec.part(f"variant: {name}", one, budget)

    write_table(rec)
    rec.save()
    print(f"\nwrote {args.out / 'ch05_gpu.json'} and ch05_gpu.md after {rec.elapsed():.0f} s")
    return 0 if not rec.data["errors"] else 1


def write_table(rec: Record) -> None:
    env = rec.data.get("environment") or {}
    lines = [f"# Chapter 5, Hopper rung ({env.get('gpu') or 'no GPU (dry run)'}; "
             f"{(env.get('versions') or {}).get('triton', '?')} Triton, {(env.get('versions') or {}).get('torch', '?')})",
             "", "| rung | bar | runs | min | median | max | verdicts (expected) |", "|---|---|---|---|---|---|---|"]
    for row in rec.data["rows"]:
        s = sorted(r["speedup"] for r in row["runs"])
        got = sum((x >= row["bar"]) == (row["expected"] == "pass") for x in s)
        lines.append(f"| {row['rung']} | {row['bar']:.2f} | {len(s)} | {s[0]:.3f} | {s[len(s) // 2]:.3f} | {s[-1]:.3f} "
                     f"| {got}/{len(s)} {row['expected']} |")
    for name, part in rec.data["parts"].items():
        if name.startswith("variant") and isinstance(part.get("result"), dict):
            for size, r in part["result"].items():
                if isinstance(r, dict) and "speedup" in r:
                    lines.append(f"| {name} at {size} (1 run) | {r['bar']:.2f} | 1 | {r['speedup']:.3f} | "
                                 f"{r['speedup']:.3f} | {r['speedup']:.3f} | {'pass' if r['passes'] else 'fail'} |")
    lines += ["", f"correctness: {rec.data['parts'].get('correctness of matmul_tma', {}).get('result')}",
              f"errors: {rec.data['errors'] or 'none'}", f"skipped: {rec.data['skipped'] or 'none'}",
              f"elapsed: {rec.elapsed():.0f} s"]
    text = "\n".join(lines) + "\n"
    (rec.out / "ch05_gpu.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    sys.exit(main())
