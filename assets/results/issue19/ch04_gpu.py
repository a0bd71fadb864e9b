"""Issue 19, chapter 4: exercise 4c (`gemm_mma`: mma.sync m16n8k16, ldmatrix, XOR swizzle, 3+ cp.async
stages; bar "4c-stretch") on one GPU.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/ch04_gpu.py --out DIR
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/ch04_gpu.py --out DIR --dry   # no GPU needed

What it does, in order, and how long each part should take on an H100 (about 90 s in all; every part
writes DIR/ch04_gpu.json again when it ends, so a run cut short keeps what it had, and parts that would
start after BUDGET_S are skipped and recorded as such):
1. the GPU, torch/Triton/CuPy versions, and whether this architecture has the "WMMA" and "cp.async"
   capabilities bar "4c-stretch" needs (about 3 s);
2. every tile variant of GEMM_MMA_SRC (VARIANTS) compiled through NVRTC for this GPU: registers, static
   shared memory, spills, and the counts of mma.sync m16n8k16 / ldmatrix / cp.async in the PTX (about 5 s);
3. the tensor-core check of exercise 4 applied to the notebook's `gemm_mma` (`ch04.check_tensor_cores`:
   HMMA in the SASS, then on a GPU an instrumented launch at 768^3 counting that the tensor cores do every
   multiply-add) (about 5 s);
4. correctness on the GPU, fresh randn fp16 inputs against the float64 product with exercise 4's
   tolerance: the notebook's `gemm_mma` through the graded cells' own checks (`ch04.check_gemm_mma`,
   visible and hidden shapes), and the shipped variant at the visible shapes, a few hidden ones and
   4096^3 (about 8 s, most of it compiling); each other variant is checked the same way in part 6,
   just before it is timed;
5. bar "4c-stretch": ten runs each of the solution's `gemm_mma` (expected to pass) and of the previous rung,
   the cp.async double-buffered WMMA stretch goal `wmma_gemm_async` (bar "4-stretch", 0.31x on an
   H200; expected to fail), as ratios to torch.mm fp16 at 4096^3 through calibrate.py's `run_rung`,
   i.e. `measure_speed`, the path the graded speed cell uses (about 45 s: a 4096^3 timing is about 2 s);
6. each other variant: correctness as in part 4, then three timings against bar "4c-stretch" (about 30 s). The notebook ships the first variant; to
   switch, change GEMM_MMA_SRC's #defines as VARIANTS says and the launcher's `MMA_TILE_M, MMA_TILE_N,
   MMA_THREADS` line to the BM, BN and THREADS printed here.
A part that fails is recorded with its error and the script goes on. The Markdown table is printed at the
end and written to DIR/ch04_gpu.md.

`--dry` (a CPU machine): the same plumbing without a GPU: the compiles are for sm_90, the tensor-core check
inspects the PTX/SASS only, and instead of running on a GPU each variant's index logic is run by
tests/chapters/test_ch04.py's NumPy emulation (ldmatrix and mma.sync from the PTX ISA's fragment tables)
on small awkward shapes against float64. Nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "assets" / "results"),
                str(ROOT / "assets" / "results" / "issue19")]

import numpy as np  # noqa: E402

from calibrate import Rung, run_rung  # noqa: E402
from parts import Record  # noqa: E402
from grader.chapters import ch04  # noqa: E402
from grader.cuda.gpu import gpu_info, versions  # noqa: E402
from grader.harness.bars import bar_for  # noqa: E402
from grader.harness.exercise import check_correctness, measure_speed  # noqa: E402
from submissions.build import _solution_sources, launchers, run_cell  # noqa: E402

BUDGET_S = 115
CHAPTER_DIR = "04_tensor_cores"
# name: the #defines changed from the solution cell's (the first, no change, is what the notebook ships).
# All fit the 48 KiB of static shared memory: STAGES * (BM * BK + BK * BN) * 2 bytes.
VARIANTS = {
    "128x128x32, 3 stages, 8 warps of 64x32": {},
    "128x128x32, 3 stages, 8 warps of 32x64": {"WARPS_M": 4, "WARPS_N": 2},
    "128x64x32, 4 stages, 8 warps of 32x32": {"BN": 64, "STAGES": 4, "WARPS_M": 4, "WARPS_N": 2},
    "64x128x32, 4 stages, 8 warps of 64x16": {"BM": 64, "STAGES": 4, "WARPS_M": 1, "WARPS_N": 8},
}
RUNG_SIZES = [(1, 1, 1), (17, 33, 9), (200, 312, 100), (256, 256, 256)]
VARIANT_SIZES = list(ch04.WMMA_GEMM.visible_sizes) + [(17, 33, 9), (513, 130, 4096), (64, 4100, 48),
                                                       (4096, 4096, 4096)]
EMULATED_SIZES = [(1, 1, 1), (17, 33, 9), (150, 136, 105)]


def variant_source(overrides: dict[str, int]) -> str:
    """The solution cell's text with GEMM_MMA_SRC's #defines changed, and the launcher's tile line to match."""
    cell = _solution_sources(CHAPTER_DIR)["mma-solution"]
    for name, value in overrides.items():
        cell, n = re.subn(rf"^#define {name} \d+$", f"#define {name} {value}", cell, flags=re.M)
        if n != 1:
            raise ValueError(f"GEMM_MMA_SRC has no single `#define {name} <number>` line: update this script")
    c = constants(cell)
    cell, n = re.subn(r"^MMA_TILE_M, MMA_TILE_N, MMA_THREADS = .*$",
                      f"MMA_TILE_M, MMA_TILE_N, MMA_THREADS = {c['BM']}, {c['BN']}, {c['THREADS']}", cell, flags=re.M)
    if n != 1:
        raise ValueError("the solution cell has no `MMA_TILE_M, MMA_TILE_N, MMA_THREADS = ...` line: update this script")
    return cell


def constants(cell: str) -> dict[str, int]:
    c = {k: int(v) for k, v in re.findall(r"^#define (BM|BN|BK|STAGES|WARPS_M|WARPS_N) (\d+)$", cell, flags=re.M)}
    c["THREADS"] = 32 * c["WARPS_M"] * c["WARPS_N"]
    return c


def variant_launcher(name: str, overrides: dict[str, int]):
    ns = launchers("ch04", "correct", [])
    run_cell(variant_source(overrides), ns, f"<ch04 gemm_mma variant {name}>")
    return ns["gemm_mma"], ns["GEMM_MMA_SRC"]


# ----------------------------------------------------------------------------------------- parts

def environment() -> dict:
    info = gpu_info()
    env = {"versions": versions(), "gpu": info.name if info else None, "cc": info.cc if info else None}
    from grader.cuda.archs import by_name
    from grader.cuda.capabilities import find
    from grader.harness.feasibility import arch_here
    arch = arch_here() or by_name("sm_90")
    env["arch"] = arch.name
    env["capabilities"] = {c: {"present": f.present, "evidence": f.evidence}
                           for c in bar_for("4c-stretch").needs for f in [find(c, arch)]}
    print(json.dumps(env, indent=1), flush=True)
    return env


def compile_report(arch_name: str) -> dict:
    from grader.cuda.archs import by_name
    from grader.notebooks.shipped import build_cuda
    out = {}
    for name, overrides in VARIANTS.items():
        src = variant_launcher(name, overrides)[1]
        built = build_cuda(CHAPTER_DIR, "GEMM_MMA_SRC", src, by_name(arch_name))
        if not built.ok:
            out[name] = {"error": built.error}
            continue
        u = built.usage["gemm_mma"]
        ptx = built.compiled.ptx
        out[name] = {"constants": constants(variant_source(overrides)), "registers": u.registers,
                     "static_shared": u.static_shared, "spill_bytes": u.spill_bytes, "stack": u.stack,
                     "mma.sync m16n8k16": ptx.count("mma.sync.aligned.m16n8k16"), "ldmatrix": ptx.count("ldmatrix"),
                     "cp.async.cg": ptx.count("cp.async.cg"), "problems": built.problems(by_name(arch_name))["gemm_mma"]}
        print(f"  {name}: {out[name]}", flush=True)
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
    for m, n, k in EMULATED_SIZES:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        got = _emulate_gemm_mma(a, b, cfg)
        if np.isnan(got).any():
            raise AssertionError(f"{m}x{n}x{k}: outputs never written")
        errs[f"{m}x{n}x{k}"] = float(np.abs(got - a @ b).max())
        if errs[f"{m}x{n}x{k}"] > 1e-9:
            raise AssertionError(f"{m}x{n}x{k}: max error {errs[f'{m}x{n}x{k}']}")
    return {"max_abs_error": errs}


def variant_speed(name: str, overrides: dict[str, int], runs: int) -> dict:
    fn, _ = variant_launcher(name, overrides)
    bar = bar_for("4c-stretch").bar
    speedups = []
    for _ in range(runs):
        r = measure_speed(ch04.MMA_GEMM, fn, "4c-stretch")
        speedups.append(round(r.speedup, 4))
        print(f"  {name}: {r.speedup:.3f}x torch.mm ({r.rate():.0f} TFLOP/s)", flush=True)
    return {"variant": name, "bar": bar, "speedups": speedups, "passes": sum(s >= bar for s in speedups)}


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
    compiled = (rec.data["parts"].get("compile each variant") or {}).get("result") or {}
    lines += ["", "| variant | registers | static smem | spills | mma m16n8k16 | ldmatrix | cp.async | correct |",
              "|---|---|---|---|---|---|---|---|"]
    for name in VARIANTS:
        c = compiled.get(name, {})
        ok = "not run"
        for kind, said in (("correctness", "yes (GPU)"), ("emulation", "yes (NumPy emulation)")):
            if f"{kind}: {name}" in rec.data["parts"]:
                ok = said
            elif f"{kind}: {name}" in rec.data["errors"]:
                ok = f"ERROR ({kind})"
        lines.append(f"| {name} | {c.get('registers', '?')} | {c.get('static_shared', '?')} | {c.get('spill_bytes', '?')} "
                     f"| {c.get('mma.sync m16n8k16', '?')} | {c.get('ldmatrix', '?')} | {c.get('cp.async.cg', '?')} | {ok} |")
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
    args = p.parse_args(argv)
    dry = args.dry or gpu_info() is None
    rec = Record(args.out, "assets/results/issue19/ch04_gpu.py", dry, budget_s=BUDGET_S, variant_rows=[])

    env = rec.part("environment", environment) or {}
    rec.part("compile each variant", lambda: compile_report(env.get("arch", "sm_90")))
    sol = rec.part("load the notebook's gemm_mma", lambda: {"ok": True, "fn": launchers("ch04", "correct", ["mma-solution"])["gemm_mma"]})
    fn = sol.pop("fn") if sol else None
    if fn is not None:
        rec.part("tensor cores (ch04.check_tensor_cores on gemm_mma)", lambda: tensor_cores(fn))
    if not dry:
        if fn is not None:
            rec.part("correctness: notebook gemm_mma (graded cells' shapes)", lambda: notebook_correctness(fn))
        first = next(iter(VARIANTS))
        rec.part(f"correctness: {first}", lambda: variant_correctness(first, VARIANTS[first]))
        print("\n| rung | bar | min | median | max | median rate | % of ceiling | verdicts |\n|---|---|---|---|---|---|---|---|")
        rungs = [Rung("4c mma.sync + ldmatrix + swizzle + 3-stage cp.async (solution)", "correct", ["mma-solution"],
                      "gemm_mma", ch04.MMA_GEMM, "4c-stretch", "pass", RUNG_SIZES),
                 Rung("4-stretch cp.async double-buffered WMMA (previous rung)", "correct", ["wmma-async-solution"],
                      "wmma_gemm_async", ch04.WMMA_GEMM, "4c-stretch", "fail", RUNG_SIZES)]
        for rung in rungs:
            row = rec.part(f"bar 4c: {rung.label}", lambda r=rung: run_rung("ch04", r, args.runs))
            if row:
                rec.data["rows"].append(row)
        for name, overrides in list(VARIANTS.items())[1:]:   # each: correct first, then timed
            if rec.part(f"correctness: {name}", lambda n=name, o=overrides: variant_correctness(n, o)) is None:
                continue
            row = rec.part(f"speed: {name}", lambda n=name, o=overrides: variant_speed(n, o, args.variant_runs))
            if row:
                rec.data["variant_rows"].append(row)
    else:
        rec.data["skipped"]["timing"] = "dry run: nothing timed"
        if fn is not None:
            rec.part("no-GPU behaviour of the graded cell (expects NoGPUError)", lambda: _no_gpu_message(fn))
        for name, overrides in VARIANTS.items():
            rec.part(f"emulation: {name}", lambda o=overrides: variant_emulation(o))

    write_table(rec)
    rec.save()
    print(f"\nwrote {args.out / 'ch04_gpu.json'} and ch04_gpu.md after {rec.elapsed():.0f} s")
    return 0 if not rec.data["errors"] else 1


def _no_gpu_message(fn) -> str:
    from grader.errors import NoGPUError
    try:
        ch04.check_gemm_mma(fn)
    except NoGPUError as exc:
        return str(exc)
    raise AssertionError("check_gemm_mma did not say no GPU")


if __name__ == "__main__":
    sys.exit(main())
