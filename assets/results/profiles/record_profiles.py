"""Record the profiler signature of every rung on this GPU, through `ladder profile`'s own code path.

    python assets/results/profiles/record_profiles.py --out OUT [--only 2,1a]

For each rung: the synthetic submission that stands for it (tests/submissions/) is built into a
notebook, profiled with grader.profiling.ncu.profile_notebook (ncu, the learner's launcher only, the
graded size unless one launch is too slow, or the size the rung names), and its raw CSV page is written to
OUT/profiles/<GPU>/<exercise>/<rung>.csv, with OUT/profiles/<GPU>/index.json. A rung that asks for a trace
is then run back to back, outside ncu, by grader.profiling.timeline: <rung>.trace.json beside its CSV.
The table of every rung and the checks of the separations the course relies on go to stdout (Markdown).

RUNGS are every graded exercise's rungs (assets/profiles/H100/). DIAGNOSE_RUNGS are the rungs of the
diagnose cases recorded on the GPU the course has now (assets/profiles/H200/): `--only 7a-occupancy,8b-host`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from submissions.build import build, load

from grader.chapters.ch08 import HOST_BOUND_SIZE
from grader.harness.ceilings import ceilings
from grader.profiles import recorded
from grader.profiling.ncu import ProfileUnavailable, find_ncu, profile_notebook

# exercise -> [(rung, submission package, submission, what the rung is)], in ladder order.
RUNGS = {
    "1a": [("one_per_thread", "ch01", "naive_1a", "one element per thread, 256 threads a block"),
           ("float4", "correct", "ch01_1a_float4", "four elements per thread through 16-byte loads")],
    "1b": [("three_kernels", "ch01", "three_kernels_1b", "multiply, add, relu as three kernels through two temporaries"),
           ("fused", "ch01", "correct", "one fused kernel: read a, x, b once, write once")],
    "2": [("naive", "ch02", "naive", "one thread per element: coalesced reads, strided writes"),
          ("unpadded_tile", "ch02", "unpadded_tile", "32x32 shared tile, 32x8 threads, no padding"),
          ("one_per_thread_tile", "ch02", "one_per_thread_tile", "padded tile, one element per thread"),
          ("solution", "ch02", "correct", "padded [32][33] tile, 32x8 threads, 4 rows each")],
    "3": [("naive_uncoalesced", "ch03", "naive_uncoalesced", "one thread per output, warps down a column of C"),
          ("naive_coalesced", "ch03", "naive_coalesced", "one thread per output, warps along a row of C"),
          ("smem_tile_32", "ch03", "smem_tile_32", "32x32 shared-memory tiles, no register blocking"),
          ("blocktile_1d", "ch03", "blocktile_1d", "64x64 block tile, 8 outputs per thread down a column"),
          ("solution", "ch03", "correct", "128x128x8 block tile, 8x8 outputs per thread")],
    "4": [("fma_only", "ch04", "fma_only", "16x16 shared tiles on the FMA units: no tensor cores"),
          ("global_wmma", "ch04", "global_wmma", "one warp per 16x16 tile, fragments from global memory"),
          ("solution", "ch04", "correct", "WMMA staged through shared memory, 128x128x32, 8 warps"),
          ("register_prefetch", "ch04", "register_prefetch", "the solution with the next slice prefetched into registers")],
    "5a": [("naive", "ch05", "naive_5a", "32x32x32 tiles, row-major order, no autotuning"),
           ("ungrouped", "ch05", "ungrouped_5a", "the solution's autotuned tiles in plain row-major order"),
           ("solution", "ch05", "correct", "large tiles, grouped order, autotuned")],
    "5b": [("unfused", "ch05", "unfused_5b", "matmul, then bias and GELU as two more kernels"),
           ("solution", "ch05", "correct", "bias and GELU fused into the matmul's epilogue")],
    "6": [("naive_triton", "ch06", "naive_triton", "scores written to an N x N fp32 tensor, then softmax, then P V"),
          ("solution", "ch06", "correct", "flash attention: online softmax over K/V tiles")],
    "6-causal": [("no_skip", "ch06", "no_skip", "causal mask applied, but every key tile still visited"),
                 ("solution", "ch06", "correct", "causal: key tiles above the diagonal skipped")],
    "6b": [("stores_p", "wrong", "backward_stores_p", "P computed once, stored to memory, read back by both kernels"),
           ("solution", "ch06", "correct", "P recomputed from the saved lse in the dK/dV kernel and in the dQ kernel")],
    "7a": [("three_pass", "ch07", "three_pass_7a", "three passes over each row, the interleaved tree"),
           ("scalar", "ch07", "scalar_7a", "online statistics, two passes, 4-byte loads"),
           ("solution", "ch07", "correct", "online statistics, two passes, 16-byte loads, 1,024 threads a row")],
    "7b": [("unfused", "ch07", "unfused_7b", "an add kernel, then a norm kernel that reads the sum back"),
           ("solution", "ch07", "correct", "residual add and RMSNorm in one program per row")],
    "8b": [("naive_tiles", "ch08", "naive_tiles", "chapter 5's naive 32x32 matmul in both linear layers"),
           ("unfused", "ch08", "unfused", "5a's matmul then a bias/GELU kernel; an add kernel then a norm kernel"),
           ("solution", "ch08", "correct", "the fused kernels of chapters 5, 6 and 7")],
    "9a": [("two_pass", "ch09", "two_pass_9a", "two kernels: the scales, then the codes, x read twice"),
           ("solution", "ch09", "correct", "one pass: 16 rows of one 128-group a program")],
    "9b": [("fp16_tiles", "ch09", "fp16_mma_9b", "the e4m3 tiles converted to fp16 before tl.dot: fp16 tensor cores"),
           ("every_step", "ch09", "every_step_9b", "the accumulator scaled after every 32 of K (BLOCK_K = 32)"),
           ("solution", "ch09", "correct", "one tl.dot per 128-block of K, scaled once; autotuned tiles")],
    "10a": [("head_per_program", "ch10", "head_per_program", "one program per query head: each KV head read once for each"),
            ("page_per_step", "ch10", "page_per_step", "one program per (sequence, KV head), one page of 16 tokens a step"),
            ("solution", "ch10", "correct", "one program per (sequence, KV head), 64 tokens a step")],
    "10b": [("unsplit", "ch10", "unsplit", "10a's kernel at 10b's size: one program per (sequence, KV head)"),
            ("solution", "ch10", "correct", "split-KV: chunks of each sequence's tokens, then a merge kernel")],
}

# (recorded exercise, its graded exercise, [(rung, package, submission, what, size as JSON or None, trace?)]).
DIAGNOSE_RUNGS = {
    "7a-occupancy": ("7a", [
        ("on_chip", "ch07", "on_chip_7a", "the row held in shared memory between the passes: one block of 1,024 "
                                          "threads per SM", None, False),
        ("on_chip_loads", "ch07", "on_chip_loads_7a", "the same, with four float4 loads in flight per thread in "
                                                      "the first pass before any is merged", None, False),
        ("solution", "ch07", "correct", "the row read twice from memory, two blocks of 1,024 threads per SM", None,
         False)]),
    "8b-host": ("8b", [
        ("b1", "ch08", "correct", "the fused kernels of chapters 5, 6 and 7 at B = 1, N = 256 (one short sequence)",
         json.dumps(list(HOST_BOUND_SIZE)), True),
        ("b64", "ch08", "correct", "the same block at B = 64, the graded size", None, True)]),
}

# The separations the course's text relies on: (exercise, rung, attribute, comparison, value).
CHECKS = [
    ("2", "unpadded_tile", "shared_ld_ways", ">=", 16.0), ("2", "solution", "shared_ld_ways", "<=", 1.5),
    ("2", "naive", "st_sectors_per_request", ">=", 16.0), ("2", "solution", "st_sectors_per_request", "<=", 4.5),
    ("1a", "float4", "dram_pct", ">=", 85.0),
    ("3", "naive_uncoalesced", "ld_sectors_per_request", ">", 8.0),
    ("4", "fma_only", "tensor_pipe_pct", "<=", 1.0), ("4", "solution", "tensor_pipe_pct", ">=", 10.0),
    # chapter 7's text: the softmax's second read comes mostly from HBM (35% L2 hits in ladder profile's run)
    ("7a", "solution", "l2_hit_pct", "<=", 50.0), ("7a", "solution", "dram_pct", ">=", 80.0),
    ("7b", "solution", "dram_pct", ">=", 80.0),
    # chapter 7's profile text: the 4-byte rung short of the peak the same passes reach in 16-byte loads
    ("7a", "scalar", "dram_pct", "<=", 75.0),
    # chapter 8's text: the naive 32x32 matmul in the block fetches its operands through L2, DRAM idle
    ("8b", "naive_tiles", "l2_hit_pct", ">=", 90.0), ("8b", "naive_tiles", "dram_pct", "<=", 20.0),
    # exercise 9.P (grader/profiles/diagnose.py, accumulator-promotion): the rung below does the promotions'
    # fp32 work four times over, and its tensor cores are busy less of the time
    ("9b", "solution", "tensor_pipe_pct", ">=", 20.0),
    # exercise 7.P (a): one block per SM on chip, two for the solution
    ("7a-occupancy", "on_chip", "theoretical_occupancy_pct", "<=", 50.0),
    ("7a-occupancy", "solution", "theoretical_occupancy_pct", ">=", 75.0),
    # exercise 8.P: the GPU waits for the host at B = 1, N = 256, hardly at B = 64
    ("8b-host", "b1", "gpu_busy_pct", "<=", 60.0), ("8b-host", "b64", "gpu_busy_pct", ">=", 80.0),
    # chapter 10's profile cell and exercise 10.P: the unsplit grid under one wave with memory idle, the split
    # solution streaming the cache
    ("10b", "unsplit", "waves_per_sm", "<=", 1.0), ("10b", "unsplit", "dram_pct", "<=", 40.0),
    ("10b", "solution", "dram_pct", ">=", 60.0), ("10a", "solution", "dram_pct", ">=", 60.0),
]
# Between two rungs: (exercise, rung, attribute, comparison, the other rung). The next rung each diagnose case
# names must be measured better than the rung it relieves.
BETWEEN = [
    ("7a-occupancy", "on_chip_loads", "time_us", "<", "on_chip"),
    ("7a-occupancy", "on_chip", "dram_pct", "<", "solution"),
    ("8b-host", "b1", "graph_call_us", "<", "b1:call_us"),
]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", help="comma-separated exercises")
    args = p.parse_args()
    only = set(args.only.split(",")) if args.only else None
    c = ceilings()
    gpu = c.gpu
    slug = next((name for name in recorded.GPUS if name in gpu), gpu.replace(" ", "_"))
    dest = args.out / "profiles" / slug
    version = subprocess.run([find_ncu(), "--version"], check=False, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    index = {"gpu": gpu, "ncu": version, "ceilings": {"copy_gbps": c.copy_gbps, "fp32_tflops": c.fp32_tflops,
                                                     "fp16_tflops": c.fp16_tflops, "fp8_tflops": c.fp8_tflops},
             "command": "python assets/results/profiles/record_profiles.py --out OUT", "exercises": {}}
    work = args.out / "notebooks"
    failures = 0
    plan = {key: (key, [(*r, None, False) for r in rungs]) for key, rungs in RUNGS.items()} | DIAGNOSE_RUNGS
    for key, (exercise, rungs) in plan.items():
        if (only and key not in only) or (not only and key in DIAGNOSE_RUNGS):
            continue
        entry = {"gpu": gpu, "rungs": [], "size": None, "flops": None}
        for rung, package, submission, what, size, traced in rungs:
            folder = load(package, submission).CHAPTER_DIR   # each submission names its chapter's folder
            nb = build(package, folder, submission, work / f"{key}-{rung}" / f"{folder}.ipynb")
            try:
                prof = profile_notebook(nb, exercise, out_dir=args.out / "raw" / key / rung, size=size)
            except ProfileUnavailable as exc:
                print(f"FAILED {key}/{rung}: {exc}", flush=True)
                failures += 1
                continue
            (dest / key).mkdir(parents=True, exist_ok=True)
            shutil.copy(prof.csv_path, dest / key / f"{rung}.csv")
            if traced and not record_trace(nb, exercise, size, dest / key / f"{rung}.trace.json"):
                failures += 1
            entry["rungs"].append({"rung": rung, "what": what, "submission": f"{package}/{submission}",
                                   "size": prof.target.get("size"), "smaller": prof.target.get("smaller"),
                                   "kernels": [s.kernel[:80] for s in prof.signatures]})
            entry["size"] = entry["size"] or prof.target.get("size")
            entry["flops"] = entry["flops"] or prof.target.get("flops")
            print(f"profiled {key}/{rung}: {prof.main.kernel[:50]} {prof.main.time_us:,.1f} us", flush=True)
            total = sum(s.time_us for s in prof.signatures)
            for s in prof.signatures[1:]:   # a launcher's other kernels (10b's merge): each one's share of the call
                print(f"  also {s.kernel[:50]} {s.time_us:,.1f} us, {100 * s.time_us / total:.1f}% of the kernels' time",
                      flush=True)
        index["exercises"][key] = entry
        dest.mkdir(parents=True, exist_ok=True)   # where every rung failed, the index still says so
        (dest / "index.json").write_text(json.dumps(index, indent=1))
    recorded.PROFILES = args.out / "profiles"
    recorded.index.cache_clear()
    print(f"\n## Signatures on {gpu} ({version})\n")
    for exercise in index["exercises"]:
        print(f"\n### {exercise}\n")
        print(recorded.table(exercise, gpu=slug))
    print("\n## Separations\n")
    for exercise, rung, attr, op, value in CHECKS:
        if exercise not in index["exercises"] or rung not in recorded.rungs(exercise, slug):
            continue
        got = getattr(recorded.load(exercise, rung, slug), attr)
        ok = not math.isnan(got) and {">=": got >= value, "<=": got <= value, ">": got > value}[op]
        failures += not ok
        print(f"- {exercise} {rung}: {attr} = {got:.2f} (expected {op} {value}) {'OK' if ok else 'NOT MET'}")
    for exercise, rung, attr, op, other in BETWEEN:
        if exercise not in index["exercises"]:
            continue
        other_rung, other_attr = other.split(":") if ":" in other else (other, attr)
        got = getattr(recorded.load(exercise, rung, slug), attr)
        than = getattr(recorded.load(exercise, other_rung, slug), other_attr)
        ok = got < than
        failures += not ok
        print(f"- {exercise} {rung}: {attr} = {got:,.2f} {op} {other_rung}'s {other_attr} {than:,.2f} "
              f"{'OK' if ok else 'NOT MET'}")
    failures += show_diagnose_cases(index["exercises"], slug)
    return 1 if failures else 0


def record_trace(notebook: Path, exercise: str, size: str | None, dest: Path) -> bool:
    """The rung's launcher called back to back under a device trace, in a process of its own (never under ncu,
    which would slow every launch): grader.profiling.timeline's report, written to `dest`."""
    cmd = [sys.executable, "-m", "grader.profiling.timeline", str(notebook), "--exercise", exercise,
           "--report", str(dest)] + (["--size", size] if size else [])
    done = subprocess.run(cmd, cwd=notebook.parent, check=False, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                                         os.environ.get("PYTHONPATH")]))})
    report = json.loads(dest.read_text()) if dest.is_file() else {}
    if done.returncode != 0 or report.get("outcome") != "ok":
        print(f"FAILED trace of {dest.parent.name}/{dest.name.split('.')[0]}: {report.get('message') or done.stderr[-400:]}", flush=True)
        return False
    t = report["trace"]
    print(f"traced {dest.parent.name}/{dest.name.split('.')[0]}: {t['call_us']:,.1f} us a call, GPU busy "
          f"{t['gpu_busy_pct']:.0f}%, {t['kernels_per_call']:.0f} kernels a call, {t['graph_call_us']:,.1f} us as a "
          "graph", flush=True)
    return True


def show_diagnose_cases(recorded_here: dict, slug: str) -> int:
    """Every diagnose case whose rungs this run recorded: which constraints its numbers show (exactly its key,
    as tests/profiles/test_diagnose.py asks). Returns how many cases show something else."""
    from grader import chapters
    from grader.profiles import diagnose

    wrong = 0
    for name in chapters.names():
        for case in diagnose.cases(getattr(chapters.module(name), "DIAGNOSE", ())):
            if case.exercise not in recorded_here or case.folder != slug:
                continue
            sig, beside = (recorded.load(case.exercise, r, slug) for r in (case.rung, case.beside))
            shown = {n for n, c in diagnose.CONSTRAINTS.items() if c.evidence(sig, beside)} - {"no-tensor-cores"}
            ok = shown == {case.binding}
            wrong += not ok
            print(f"- case {case.key}: {case.rung} beside {case.beside} shows {sorted(shown)} (key {case.binding}) "
                  f"{'OK' if ok else 'NOT MET'}")
    return wrong


if __name__ == "__main__":
    sys.exit(main())
