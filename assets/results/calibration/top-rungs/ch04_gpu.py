"""The top rungs, chapter 4: exercise 4c (`gemm_mma`: mma.sync m16n8k16, ldmatrix, XOR swizzle, cp.async
stages in dynamic shared memory; bar "4c-stretch") on one GPU, choosing among tile variants in ONE run.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch04_gpu.py --out DIR
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/calibration/top-rungs/ch04_gpu.py --out DIR --dry   # no GPU needed

What it does, in order, and how long each part should take on an H100 (about 140 s in all; every part
writes DIR/ch04_gpu.json again when it ends, so a run cut short keeps what it had; a variant's timing that
would start after VARIANT_BUDGET_S is skipped, and so is any part after BUDGET_S, each recorded as such):
1. the GPU, torch/Triton/CuPy versions, and whether this architecture has the "WMMA" and "cp.async"
   capabilities bar "4c-stretch" needs (about 3 s);
2. every variant of GEMM_MMA_SRC (VARIANTS: #define changes of the solution cell) compiled through NVRTC
   for this GPU: registers, static shared memory, spills, the counts of mma.sync m16n8k16 / ldmatrix /
   cp.async in the PTX, and the launch the notebook's launcher makes of it: threads, dynamic shared
   memory (MMA_SHARED, checked equal to the kernel's SMEM_BYTES) and the grid at 4096^3 (about 15 s,
   the branch-free variants compiling slower);
3. the tensor-core check of exercise 4 on the notebook's `gemm_mma` (`ch04.check_tensor_cores`: HMMA in
   the SASS, then an instrumented launch at 768^3 counting that the tensor cores do every multiply-add;
   this also launches the instrumented copy with 96 KiB of dynamic shared memory) (about 5 s);
4. correctness on the GPU, fresh randn fp16 inputs against the float64 product with exercise 4's
   tolerance: the notebook's `gemm_mma` through the graded cells' checks (`ch04.check_gemm_mma`, visible
   and hidden shapes), then EVERY variant at the visible and hidden shapes and 4096^3. The variants whose
   code has never run on a GPU (NEW_CODE: the branch-free main loop) are checked first in a child
   process, so that a fault in one (an illegal address poisons a CUDA context) cannot take this
   process's later timings with it; a child that fails stops, and a new child checks the rest. A
   variant that failed there is neither checked again nor timed here (about 25 s, most of it
   compiling and the child's start);
5. each correct variant timed `--variant-runs` (3) times as a ratio to torch.mm fp16 at 4096^3 through
   `measure_speed`, the path the speed cell uses, in VARIANTS' order (the shipped kernel, the new
   variants, then row-by-row launch order), each with the blocks per SM the driver reports for its
   launch (cuOccupancyMaxActiveBlocksPerMultiprocessor) and its registers as loaded (about 55 s: a
   4096^3 timing is about 2 s);
6. bar "4c-stretch": `--runs` (10) timings of the best variant (highest median in part 5) and ten of the
   previous rung, the cp.async double-buffered WMMA stretch goal `wmma_gemm_async` (parts.py's
   `run_rung`) (about 45 s).
A part that fails is recorded with its error and the script goes on. The Markdown table is printed at the
end and written to DIR/ch04_gpu.md. The notebook ships the first variant; to ship another, change
GEMM_MMA_SRC's #defines as VARIANTS says (the launcher reads them, so nothing else changes).

`--dry` (a CPU machine): the same plumbing without a GPU: the compiles are for sm_90, the tensor-core check
inspects the PTX/SASS only, and instead of running on a GPU each variant's index logic is run by
tests/chapters/test_ch04.py's NumPy emulation (ldmatrix and mma.sync from the PTX ISA's fragment tables)
on small awkward shapes against float64 (NEW_CODE's in a child process, as on a GPU). Nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]

import numpy as np  # noqa: E402

from parts import Rung, run_rung  # noqa: E402
from parts import Record  # noqa: E402
from grader.chapters import ch04  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import check_correctness, measure_speed  # noqa: E402
from submissions.build import _solution_sources, launchers, run_cell  # noqa: E402

BUDGET_S = 150           # no part starts after this
VARIANT_BUDGET_S = 100   # no variant's 3 timings start after this, so that part 6 has its 45 s
CHILD_TIMEOUT_S = 90     # one child process checking the NEW_CODE variants
CHAPTER_DIR = "04_tensor_cores"
# name: the #defines changed from the solution cell's (the first, no change, is what the notebook ships).
# Dynamic shared memory: STAGES * (BM * BK + BK * BN) * 2 bytes, at most 227 KiB a block on an H100. Each
# compiles for sm_80 and sm_90 with no spills (tests/chapters/test_ch04.py, MMA_VARIANTS). Measured before
# on an H100 and left out here (assets/results/calibration/top-rungs/h100/ch04-dynamic): 128x256x32 with 3 and 5 stages,
# 256x128x32, 128x128x64 and 128x128x32 with 8 warps of 64x32 (medians of 3 timings 0.352-0.429x, the
# shipped tile's 0.423x).
# BRANCH_FREE 1: blocks wholly inside C run a main loop with no branch between barriers (copies predicated,
# zero-filled past K, from addresses kept in two pointers; ldmatrix addresses with the swizzle worked out
# once), so that the compiler schedules each slice's copies, ldmatrix and barrier among the MMAs; it also
# frees the registers that BK = 64 needs (the shipped loop spills there).
VARIANTS = {
    "128x256x32, 4 stages, 8 warps of 64x64, branch-free loop": {},
    "128x256x32, 4 stages, 8 warps of 64x64, without the branch-free loop": {"BRANCH_FREE": 0},
    "128x256x64, 3 stages, 8 warps of 64x64, branch-free loop": {"BRANCH_FREE": 1, "BK": 64, "STAGES": 3},
    "128x256x64, 3 stages, 8 warps of 64x64, branch-free loop, groups of 16 block rows":
        {"BRANCH_FREE": 1, "BK": 64, "STAGES": 3, "GROUP_M": 16},
    "128x128x32, 4 stages, 4 warps of 64x64, 2 blocks per SM, branch-free loop":
        {"BRANCH_FREE": 1, "BN": 128, "WARPS_N": 2, "MIN_BLOCKS": 2},
    "128x256x32, 4 stages, 8 warps of 64x64, row-by-row launch order": {"GROUP_M": 1},
}
# Variants whose code has never run on a GPU: checked in a child process before this one runs them.
NEW_CODE = [name for name, overrides in VARIANTS.items() if overrides.get("BRANCH_FREE")]
RUNG_SIZES = [(1, 1, 1), (17, 33, 9), (200, 312, 100), (256, 256, 256)]
VARIANT_SIZES = list(dict.fromkeys(list(ch04.WMMA_GEMM.visible_sizes) + list(ch04.HIDDEN_SIZES)
                                   + [(4096, 4096, 4096)]))
EMULATED_SIZES = [(1, 1, 1), (17, 33, 9), (150, 136, 105)]   # plus, per variant, 2 x 2 blocks with one interior


def variant_source(overrides: dict[str, int]) -> str:
    """The solution cell's text with GEMM_MMA_SRC's #defines changed (the launcher reads them)."""
    cell = _solution_sources(CHAPTER_DIR)["mma-solution"]
    for name, value in overrides.items():
        cell, n = re.subn(rf"^#define {name} \d+\b", f"#define {name} {value}", cell, flags=re.M)
        if n != 1:
            raise ValueError(f"GEMM_MMA_SRC has no single `#define {name} <number>` line: update this script")
    return cell


def constants(cell: str) -> dict[str, int]:
    names = ("BM", "BN", "BK", "STAGES", "WARPS_M", "WARPS_N", "MIN_BLOCKS", "GROUP_M", "BRANCH_FREE")
    c = {k: int(v) for k, v in re.findall(r"^#define (\w+) (\d+)\b", cell, flags=re.M) if k in names}
    c["THREADS"] = 32 * c["WARPS_M"] * c["WARPS_N"]
    c["SMEM_BYTES"] = c["STAGES"] * (c["BM"] * c["BK"] + c["BK"] * c["BN"]) * 2
    return c


def variant_namespace(name: str, overrides: dict[str, int]) -> dict:
    ns = launchers("ch04", "correct", [])
    run_cell(variant_source(overrides), ns, f"<ch04 gemm_mma variant {name}>")
    return ns


def variant_launcher(name: str, overrides: dict[str, int]):
    ns = variant_namespace(name, overrides)
    return ns["gemm_mma"], ns["GEMM_MMA_SRC"]


def launch_of(ns: dict, size=(4096, 4096, 4096)) -> dict:
    """What the launcher asks for at `size`: recorded through the launch handlers, nothing runs."""
    import torch
    from grader.cuda import launches
    m, n, k = size
    seen = []
    with launches.intercept(lambda launch: seen.append({"grid": list(launch.grid), "block": list(launch.block),
                                                        "shared_mem": launch.shared_mem})):
        ns["gemm_mma"](torch.empty(m, k, dtype=torch.float16, device="meta"),
                       torch.empty(k, n, dtype=torch.float16, device="meta"),
                       torch.empty(m, n, dtype=torch.float32, device="meta"))
    return seen[0] if len(seen) == 1 else {"launches": seen}


# ----------------------------------------------------------------------------------------- parts

def environment() -> dict:
    info = gpu_info()
    env = {"versions": versions(), "gpu": info.name if info else None, "cc": info.cc if info else None}
    from grader.cuda.archs import by_name
    from grader.cuda.capabilities import find
    from grader.harness.feasibility import arch_here
    arch = arch_here() or by_name("sm_90")
    env["arch"] = arch.name
    if info is not None:   # what a launch may opt in to (grader.cuda.kernels): the variants need up to 128 KiB
        from grader.cuda.kernels import per_block_shared_limit
        env["shared_per_block_optin"] = per_block_shared_limit()[0]
    env["capabilities"] = {c: {"present": f.present, "evidence": f.evidence}
                           for c in bar_for("4c-stretch").needs for f in [find(c, arch)]}
    print(json.dumps(env, indent=1), flush=True)
    return env


def compile_report(arch_name: str) -> dict:
    from grader.cuda.archs import by_name
    from grader.notebooks.shipped import build_cuda
    arch = by_name(arch_name) if arch_name.startswith("sm_") else None
    out = {}
    for name, overrides in VARIANTS.items():
        ns = variant_namespace(name, overrides)
        src = ns["GEMM_MMA_SRC"]
        c = constants(src)
        launch = launch_of(ns)
        entry = {"constants": c, "launch at 4096^3": launch, "launcher MMA_SHARED": ns.get("MMA_SHARED"),
                 "launcher MMA_THREADS": ns.get("MMA_THREADS")}
        if ns.get("MMA_SHARED") != c["SMEM_BYTES"] or launch.get("shared_mem") != c["SMEM_BYTES"]:
            entry["error"] = f"the launch asks for {launch.get('shared_mem')} bytes, the kernel's SMEM_BYTES is {c['SMEM_BYTES']}"
        built = build_cuda(CHAPTER_DIR, "GEMM_MMA_SRC", src, arch or by_name("sm_90"))
        if not built.ok:
            entry["error"] = built.error
        else:
            u = built.usage["gemm_mma"]
            ptx = built.compiled.ptx
            entry.update({"registers": u.registers, "static_shared": u.static_shared, "spill_bytes": u.spill_bytes,
                          "stack": u.stack, "mma.sync m16n8k16": ptx.count("mma.sync.aligned.m16n8k16"),
                          "ldmatrix": ptx.count("ldmatrix"), "cp.async.cg": ptx.count("cp.async.cg"),
                          "problems": built.problems(arch or by_name("sm_90"))["gemm_mma"]})
            limit = (arch or by_name("sm_90")).max_shared_per_block
            if c["SMEM_BYTES"] + u.static_shared > limit:
                entry["problems"] = entry["problems"] + [f"{c['SMEM_BYTES']} bytes of shared memory, more than {limit}"]
        print(f"  {name}: {entry}", flush=True)
        out[name] = entry
    return out


def tensor_cores(fn) -> dict:
    listings = ch04.check_tensor_cores(fn, what="4c", verbose=True)
    return {l.name: {"level": l.level, "arch": l.arch, "tensor_core": dict(l.tensor_core_instructions())}
            for l in listings}


def notebook_correctness(fn) -> dict:
    ch04.check_gemm_mma(fn)
    ch04.check_gemm_mma(fn, sizes=ch04.HIDDEN_SIZES)
    return {"visible": list(ch04.MMA_GEMM.visible_sizes), "hidden": ch04.HIDDEN_SIZES, "passed": True}


def variant_correctness(name: str, overrides: dict[str, int]) -> dict:
    fn, _ = variant_launcher(name, overrides)
    res = check_correctness(ch04.MMA_GEMM, fn, sizes=VARIANT_SIZES, trials=1, verbose=False)
    return {"sizes": VARIANT_SIZES, "passed": True, "detail": str(res)[:400]}


def variant_emulation(overrides: dict[str, int]) -> dict:
    """The CPU stand-in: the kernel's index logic in NumPy (tests/chapters/test_ch04.py) vs float64."""
    from chapters.test_ch04 import _emulate_gemm_mma, _mma_config
    cfg = _mma_config(variant_launcher("emulated", overrides)[1])
    rng = np.random.default_rng(0)
    errs = {}
    sizes = EMULATED_SIZES + [(cfg["BM"] + 24, cfg["BN"] + 8, 3 * cfg["BK"] + 8)]
    for m, n, k in sizes:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        got = _emulate_gemm_mma(a, b, cfg)
        if np.isnan(got).any():
            raise AssertionError(f"{m}x{n}x{k}: outputs never written")
        errs[f"{m}x{n}x{k}"] = float(np.abs(got - a @ b).max())
        if errs[f"{m}x{n}x{k}"] > 1e-9:
            raise AssertionError(f"{m}x{n}x{k}: max error {errs[f'{m}x{n}x{k}']}")
    return {"max_abs_error": errs, "fast-path slices at the last size": _emulate_gemm_mma.fast_slices}


def _run_figures(r) -> dict:
    """One measure_speed result, as parts.py's run_rung records it."""
    return {"speedup": round(r.speedup, 4), "ms": round(r.ms, 5), "baseline_ms": round(r.baseline_ms, 5),
            "baseline": r.baseline_name, "rate": round(r.rate(), 2), "unit": r.unit,
            "pct_of_ceiling": round(r.pct_of_ceiling() or 0.0, 1), "spread": round(r.comparison.candidate.spread, 4),
            "size": r.size}


def loaded_kernel(ns: dict) -> dict:
    """The variant's kernel as the driver loaded it (after a launch): registers, local memory, and how many
    of its blocks fit on one SM with the launch's threads and dynamic shared memory."""
    try:
        from cupy_backends.cuda.api import driver
        fn = ns["gemm_mma_kernel"]._function
        threads, smem = ns["MMA_THREADS"], ns["MMA_SHARED"]
        return {"registers": fn.num_regs, "local_bytes": fn.local_size_bytes, "threads": threads,
                "dynamic_shared": smem,
                "blocks_per_sm": driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, smem)}
    except Exception as exc:  # noqa: BLE001 - a report, not a check
        return {"error": f"{type(exc).__name__}: {exc}"}


def variant_speed(name: str, overrides: dict[str, int], runs: int) -> dict:
    ns = variant_namespace(name, overrides)
    fn = ns["gemm_mma"]
    bar = bar_for("4c-stretch").bar
    out = []
    for _ in range(runs):
        r = measure_speed(ch04.MMA_GEMM, fn, "4c-stretch")
        out.append(_run_figures(r))
        print(f"  {name}: {r.speedup:.3f}x torch.mm ({r.rate():.0f} TFLOP/s)", flush=True)
    speedups = [x["speedup"] for x in out]
    loaded = loaded_kernel(ns)
    print(f"  {name}: loaded kernel {loaded}", flush=True)
    return {"variant": name, "bar": bar, "speedups": speedups, "runs": out, "loaded kernel": loaded,
            "median": statistics.median(speedups), "passes": sum(s >= bar for s in speedups)}


# ------------------------------------------------------------------ NEW_CODE in a child process

CHILD_MARK = "@@ch04-child "


def child_checks(indices: list[int], dry: bool, want_gpu: bool) -> int:
    """`--check-variants`: check VARIANTS[i] for each i in turn (on a GPU: variant_correctness; without
    one: variant_emulation), one marked line on stdout as each starts and ends; stop at the first
    failure (a fault leaves this process's CUDA context unusable), exit status 3. First, one line that
    says whether this process can use the GPU the parent uses (`want_gpu`)."""
    ready = {"ready": True}
    if want_gpu:
        try:
            if dry:
                raise RuntimeError("no GPU found in the child process")
            import torch
            torch.ones(8, device="cuda").sum().item()   # a context of its own beside the parent's
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which checks in its own process
            ready = {"ready": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    print(CHILD_MARK + json.dumps(ready), flush=True)
    if not ready["ready"]:
        return 4
    names = list(VARIANTS)
    for i in indices:
        name = names[i]
        print(CHILD_MARK + json.dumps({"start": name}), flush=True)
        try:
            result = variant_emulation(VARIANTS[name]) if dry else variant_correctness(name, VARIANTS[name])
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which goes on
            print(CHILD_MARK + json.dumps({"variant": name, "error": f"{type(exc).__name__}: {exc}"[:2000]}), flush=True)
            return 3
        print(CHILD_MARK + json.dumps({"variant": name, "result": result}, default=str), flush=True)
    return 0


class ChildWithoutGPU(RuntimeError):
    """A child process of this script could not use the GPU (the parent then checks in its own process)."""


def isolated_checks(names: list[str], dry: bool, out: Path) -> dict[str, dict]:
    """{name: {"result": ...} or {"error": ...}} for each of `names`, checked by child processes of
    this script: a child stops at a failure, and the next checks the names it did not reach. Raises
    ChildWithoutGPU when a child cannot use the GPU (say, a GPU in exclusive-process mode) or does not
    start at all."""
    order, found, todo = list(VARIANTS), {}, list(names)
    while todo:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--out", str(out / "child"),
               "--check-variants", ",".join(str(order.index(n)) for n in todo)] + (["--dry"] if dry else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=os.environ.copy(),
                                  check=False)
            stdout, stderr, ended = proc.stdout, proc.stderr, f"exit status {proc.returncode}"
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            ended = f"killed after {CHILD_TIMEOUT_S} s"
        started, ready = None, False
        for line in stdout.splitlines():
            if not line.startswith(CHILD_MARK):
                print(f"  [child] {line}", flush=True)
                continue
            msg = json.loads(line[len(CHILD_MARK):])
            if "ready" in msg:
                if not msg["ready"]:
                    raise ChildWithoutGPU(msg.get("error", "?"))
                ready = True
            elif "start" in msg:
                started = msg["start"]
                print(f"  [child] checking {started}", flush=True)
            else:
                found[msg["variant"]] = {k: v for k, v in msg.items() if k != "variant"}
                print(f"  [child] {msg['variant']}: {'ERROR ' + msg['error'] if 'error' in msg else 'correct'}", flush=True)
                started = None
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        if not ready and not found:
            raise ChildWithoutGPU(f"the child process did not start checking ({ended}): {tail}")
        if started is not None:   # the child ended while checking it
            found[started] = {"error": f"the child process ended while checking it ({ended}): {tail}"}
        before = len(todo)
        todo = [n for n in todo if n not in found]
        if len(todo) == before:   # no progress: the child could not start checking at all
            for n in todo:
                found[n] = {"error": f"the child process checked nothing ({ended}): {tail}"}
            break
    return found


def pick_best(variant_rows: list[dict]) -> str | None:
    """The variant with the highest median ratio (ties: the earlier in VARIANTS, the shipped one first)."""
    order = list(VARIANTS)
    rows = [v for v in variant_rows if v.get("speedups")]
    if not rows:
        return None
    return max(rows, key=lambda v: (statistics.median(v["speedups"]), -order.index(v["variant"])))["variant"]


def best_rung(name: str, runs: int) -> dict:
    """The best variant, `runs` timings, recorded as a rung row (expected to pass the bar)."""
    row = variant_speed(name, VARIANTS[name], runs)
    bar = row["bar"]
    speedups = row["speedups"]
    print(f"| 4c {name} (best variant) | {bar:.2f} | {min(speedups):.3f} | {statistics.median(speedups):.3f} | "
          f"{max(speedups):.3f} | {sum(s >= bar for s in speedups)}/{len(speedups)} pass |", flush=True)
    return {"rung": f"4c {name} (best variant{', shipped' if name == next(iter(VARIANTS)) else ''})",
            "bar_key": "4c-stretch", "bar": bar, "expected": "pass", "holds": all(s >= bar for s in speedups),
            "runs": row["runs"], "variant": name, "overrides": VARIANTS[name]}


def write_table(rec: Record) -> None:
    env = rec.data.get("parts", {}).get("environment", {}).get("result") or {}
    lines = [f"# Chapter 4, exercise 4c ({env.get('gpu') or 'no GPU (dry run)'}; "
             f"torch {(env.get('versions') or {}).get('torch', '?')})", "",
             "| rung | bar | runs | min | median | max | verdicts (expected) |", "|---|---|---|---|---|---|---|"]
    for row in rec.data["rows"]:
        s = sorted(r["speedup"] for r in row["runs"])
        got = sum((x >= row["bar"]) == (row["expected"] == "pass") for x in s)
        lines.append(f"| {row['rung']} | {row['bar']:.2f} | {len(s)} | {s[0]:.3f} | {statistics.median(s):.3f} | "
                     f"{s[-1]:.3f} | {got}/{len(s)} {row['expected']} |")
    for v in rec.data["variant_rows"]:
        s = sorted(v["speedups"])
        lines.append(f"| variant {v['variant']} | {v['bar']:.2f} | {len(s)} | {s[0]:.3f} | {statistics.median(s):.3f} "
                     f"| {s[-1]:.3f} | {v['passes']}/{len(s)} pass |")
    if rec.data.get("best"):
        lines += ["", f"best variant (highest median of its {len(rec.data['variant_rows'][0]['speedups']) if rec.data['variant_rows'] else '?'} "
                      f"timings): {rec.data['best']}"]
    compiled = (rec.data["parts"].get("compile each variant") or {}).get("result") or {}
    loaded = {v["variant"]: v.get("loaded kernel") or {} for v in rec.data["variant_rows"]}
    lines += ["", "| variant | registers | static smem | dynamic smem (launch) | threads | grid at 4096^3 | spills "
                  "| mma m16n8k16 | ldmatrix | cp.async | blocks per SM (driver) | correct |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in VARIANTS:
        c = compiled.get(name, {})
        launch = c.get("launch at 4096^3") or {}
        occupancy = loaded.get(name, {}).get("blocks_per_sm", "not timed" if name not in loaded else "?")
        ok = "not run"
        for kind, said in (("correctness", "yes (GPU)"), ("emulation", "yes (NumPy emulation)")):
            if f"{kind}: {name}" in rec.data["parts"]:
                ok = said
            elif f"{kind}: {name}" in rec.data["errors"]:
                ok = f"ERROR ({kind})"
        if c.get("error"):
            ok += f"; compile/launch error: {c['error'][:80]}"
        lines.append(f"| {name} | {c.get('registers', '?')} | {c.get('static_shared', '?')} | {launch.get('shared_mem', '?')} "
                     f"| {(launch.get('block') or ['?'])[0]} | {launch.get('grid', '?')} | {c.get('spill_bytes', '?')} "
                     f"| {c.get('mma.sync m16n8k16', '?')} | {c.get('ldmatrix', '?')} | {c.get('cp.async.cg', '?')} "
                     f"| {occupancy} | {ok} |")
    lines += ["", f"errors: {rec.data['errors'] or 'none'}", f"skipped: {rec.data['skipped'] or 'none'}",
              f"elapsed: {rec.elapsed():.0f} s"]
    text = "\n".join(lines) + "\n"
    (rec.out / "ch04_gpu.md").write_text(text)
    print("\n" + text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: compile, inspect and emulate, time nothing")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--variant-runs", type=int, default=3)
    p.add_argument("--check-variants", help="(used by the script itself) check these VARIANTS indices in this "
                                             "process, one marked line each, and exit")
    args = p.parse_args(argv)
    dry = args.dry or gpu_info() is None
    if args.check_variants:
        return child_checks([int(i) for i in args.check_variants.split(",")], dry, want_gpu=not args.dry)
    rec = Record(args.out, "assets/results/calibration/top-rungs/ch04_gpu.py", dry, budget_s=BUDGET_S, variant_rows=[], best=None)

    env = rec.part("environment", environment) or {}
    rec.part("compile each variant", lambda: compile_report(env.get("arch", "sm_90")))
    sol = rec.part("load the notebook's gemm_mma", lambda: {"ok": True, "fn": launchers("ch04", "correct", ["mma-solution"])["gemm_mma"]})
    fn = sol.pop("fn") if sol else None
    if fn is not None:
        rec.part("tensor cores (ch04.check_tensor_cores on gemm_mma)", lambda: tensor_cores(fn))
    if not dry:
        if fn is not None:
            rec.part("correctness: notebook gemm_mma (graded cells' shapes)", lambda: notebook_correctness(fn))
        # every variant checked before any is timed; NEW_CODE first, in child processes
        isolated = rec.part("correctness of NEW_CODE variants in child processes",
                            lambda: isolated_checks(NEW_CODE, dry, args.out))
        if isolated is None:   # no child could use the GPU: checked here, as the other variants are
            print("NEW_CODE variants: checked in this process (see the error above)", flush=True)
        correct = [name for name, overrides in VARIANTS.items()
                   if rec.part(f"correctness: {name}",
                               lambda n=name, o=overrides: _taken(isolated, n) if isolated is not None and n in NEW_CODE
                               else variant_correctness(n, o))
                   is not None]
        for name in correct:
            row = rec.part(f"speed: {name}", lambda n=name: variant_speed(n, VARIANTS[n], args.variant_runs),
                           budget=VARIANT_BUDGET_S)
            if row:
                rec.data["variant_rows"].append(row)
        best = pick_best(rec.data["variant_rows"])
        rec.data["best"] = best
        print("\n| rung | bar | min | median | max | median rate | % of ceiling | verdicts |\n|---|---|---|---|---|---|---|---|")
        if best is not None:
            row = rec.part(f"bar 4c: best variant {best}, {args.runs} runs", lambda: best_rung(best, args.runs))
            if row:
                rec.data["rows"].append(row)
        else:
            rec.data["skipped"]["best variant"] = "no variant was both correct and timed"
        prev = Rung("4-stretch cp.async double-buffered WMMA (previous rung)", "correct", ["wmma-async-solution"],
                    "wmma_gemm_async", ch04.WMMA_GEMM, "4c-stretch", "fail", RUNG_SIZES)
        row = rec.part(f"bar 4c: {prev.label}", lambda: run_rung("ch04", prev, args.runs))
        if row:
            rec.data["rows"].append(row)
    else:
        rec.data["skipped"]["timing"] = "dry run: nothing timed"
        if fn is not None:
            rec.part("no-GPU behaviour of the graded cell (expects NoGPUError)", lambda: _no_gpu_message(fn))
        isolated = rec.part("emulation of NEW_CODE variants in child processes",
                            lambda: isolated_checks(NEW_CODE, dry, args.out))
        for name, overrides in VARIANTS.items():
            rec.part(f"emulation: {name}",
                     lambda n=name, o=overrides: _taken(isolated, n) if isolated is not None and n in NEW_CODE
                     else variant_emulation(o))
        rec.part("plumbing: pick_best on made-up medians (not a measurement)", _check_pick_best)

    write_table(rec)
    rec.save()
    print(f"\nwrote {args.out / 'ch04_gpu.json'} and ch04_gpu.md after {rec.elapsed():.0f} s")
    return 0 if not rec.data["errors"] else 1


def _taken(isolated: dict[str, dict], name: str) -> dict:
    """A child process's verdict on `name`, as this process's own check would give it (raises on failure)."""
    got = isolated.get(name)
    if got is None:
        raise RuntimeError("not checked: the child processes did not report on it")
    if "error" in got:
        raise RuntimeError(f"failed in a child process: {got['error']}")
    return {**got["result"], "checked in": "a child process"}


def _check_pick_best() -> str:
    names = list(VARIANTS)
    rows = [{"variant": names[0], "speedups": [0.40, 0.41, 0.39]}, {"variant": names[1], "speedups": [0.45, 0.2, 0.46]},
            {"variant": names[2], "speedups": [0.41, 0.40, 0.39]}, {"variant": names[3], "speedups": []}]
    got = pick_best(rows)
    if got != names[1]:
        raise AssertionError(f"pick_best chose {got}, not the highest median ({names[1]})")
    tie = pick_best([{"variant": names[2], "speedups": [0.4]}, {"variant": names[0], "speedups": [0.4]}])
    if tie != names[0]:
        raise AssertionError(f"on a tie pick_best chose {tie}, not the earlier variant")
    return "ok"


def _no_gpu_message(fn) -> str:
    from grader.errors import NoGPUError
    try:
        ch04.check_gemm_mma(fn)
    except NoGPUError as exc:
        return str(exc)
    raise AssertionError("check_gemm_mma did not say no GPU")


if __name__ == "__main__":
    sys.exit(main())
