"""Chapter 5 on this GPU with only the configurations that fit 99 KiB of shared memory per block: where
the solution lands against 5a's and 5b's bars for the GPUs that have 99 KiB (compute capability 8.6
and 8.9: RTX 30 and 40 series, A10, L4), measured on a GPU with more (issue 18; meant for an H100).

    python assets/results/calibrate_ch05_smallsmem.py --runs 10 --out assets/results/ch05-smallsmem-h100/ch05-smallsmem.json
    (or: bash assets/results/gpu_session.sh calibrate OUTDIR ch05_smallsmem)

What it does:
1. Runs the solution's cells as if on this GPU with its shared memory per block lowered to 99 KiB
   (grader.cuda.archs.targeting), so that `ch05.configs_that_fit` keeps only the configurations whose
   buffers fit there. Each of the solution's configurations is also compiled for this GPU's
   architecture (Triton's `metadata.shared`), and the record keeps both figures.
2. Times 5a (4096^3 against torch.mm) and 5b (8192 x 8192 x 1024 against torch eager) RUNS times each
   through the graded `measure_speed`, as calibrate.py does for every chapter.
3. Times 5a with each kept configuration alone, EACH_RUNS times, to show which carries the speed, and
   with each of a few configurations outside the solution's list that also fit 99 KiB here
   (CANDIDATES), to show whether the list should change.

The record (--out, JSON; the Markdown table goes to stdout) names the GPU, the versions and the
ceilings; every run's speedup; and the verdicts against the bars grader/bars.toml gives sm_86 (the
99 KiB family) and against the default bars.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

from calibrate import ROOT, Rung, run_rung  # noqa: F401  (ROOT puts tests/ on the path)
from grader.chapters import ch05
from grader.cuda import archs, crosscompile
from grader.cuda.gpu import arch_here, gpu_info, versions
from grader.harness.bars import bar_for
from grader.harness.ceilings import ceilings
from grader.notebooks import shipped

LIMIT = 99 * archs.KIB
FAMILY = "sm_86"       # whose bars the verdicts are for (sm_89 has the same)
SIZES = [(1, 1, 1), (31, 33, 35), (127, 129, 257), (512, 512, 512), (2049, 1023, 4100)]
# Not in the solution's list; each fits 99 KiB on an H100 (96, 72 and 96 KiB, compiled for sm_90).
CANDIDATES = [dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
              dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3),
              dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)]


def limited_arch() -> archs.Arch:
    here = arch_here()
    if here is None:
        raise SystemExit("this calibration needs a GPU")
    return dataclasses.replace(here, max_shared_per_block=LIMIT)


@contextlib.contextmanager
def only(config):
    """While the solution's cells run, the autotuner is given `config` alone (ch05.configs_that_fit
    returns it, whatever the list)."""
    original = ch05.configs_that_fit
    ch05.configs_that_fit = lambda configs: [config]
    try:
        yield
    finally:
        ch05.configs_that_fit = original


def compiled_configs(arch: archs.Arch) -> tuple[list[dict], list]:
    """Every configuration of the solution: counted and compiled shared memory on this GPU, and whether
    the 99 KiB limit keeps it."""
    recorded = shipped.record_solution("ch05", shipped.triton_chapters()["ch05"], arch_here())
    configs = recorded.namespace["MATMUL_CONFIGS"]
    (launch,) = [l for l in recorded.launches if l.name == "matmul_kernel"]
    launch = crosscompile.RecordedLaunch(launch.name, launch.kernel, launch.args, launch.kwargs, tuple(configs))
    with crosscompile.quiet_triton():
        builds = crosscompile.build(launch, arch_here())
    with archs.targeting(arch):
        kept = ch05.configs_that_fit(configs)
    return [{"config": ch05._describe_config(c), "kwargs": c.all_kwargs(), "counted_bytes": ch05.shared_memory_bytes(c, arch),
             "compiled_bytes": b.shared, "registers": b.usage.registers, "tensor_core_ops": b.tensor_core_ops(),
             "kept": c in kept} for c, b in zip(configs, builds)], [c for c in configs if c in kept]


def verdicts(rung: dict, key: str) -> dict:
    speedups = [r["speedup"] for r in rung["runs"]]
    out = {}
    for label, arch in (("sm_86", FAMILY), ("default", None)):
        bar = bar_for(key, arch).bar
        out[label] = {"bar": bar, "passed": sum(s >= bar for s in speedups), "of": len(speedups)}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--each-runs", type=int, default=3, help="runs of 5a with each kept configuration alone (0: skip)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    info = gpu_info()
    arch = limited_arch()
    ceil = ceilings()
    table, kept = compiled_configs(arch)
    record = {"what": "chapter 5 restricted to the configurations that fit 99 KiB per block (issue 18)",
              "gpu": info.name, "cc": info.cc, "limit_bytes": LIMIT, "versions": versions(),
              "ceilings": {"copy_gbps": ceil.copy_gbps, "fp32_tflops": ceil.fp32_tflops,
                           "fp16_tflops": ceil.fp16_tflops},
              "date": time.strftime("%Y-%m-%d"), "runs": args.runs, "configurations": table, "rungs": []}
    print(f"{info.name} ({arch.name}), shared memory per block limited to {LIMIT // 1024} KiB: "
          f"{len(kept)} of {len(table)} configurations kept")
    for row in table:
        print(f"  {row['config']:<40} counted {row['counted_bytes'] // 1024:>4} KiB, compiled "
              f"{row['compiled_bytes'] // 1024:>4} KiB  {'kept' if row['kept'] else 'left out'}")
    print("\n| rung | bar | min | median | max | median rate | % of ceiling | verdicts |")
    print("|---|---|---|---|---|---|---|---|")
    rungs = [(Rung("5a grouped, configurations that fit 99 KiB (solution)", "correct", ["matmul-solution"], "matmul",
                   ch05.MATMUL, "5a", "pass", SIZES), args.runs, None),
             (Rung("5b fused, configurations that fit 99 KiB (solution)", "correct",
                   ["matmul-solution", "fused-solution"], "matmul_bias_act", ch05.FUSED, "5b", "pass", SIZES),
              args.runs, None)]
    if args.each_runs:
        import triton

        extra = [triton.Config({k: v for k, v in c.items() if k.isupper()}, num_warps=c["num_warps"],
                               num_stages=c["num_stages"]) for c in CANDIDATES]
        rungs += [(Rung(f"5a with only {ch05._describe_config(c)}{'' if c in kept else ' (not in the list)'}",
                        "correct", ["matmul-solution"], "matmul", ch05.MATMUL, "5a", "pass", SIZES), args.each_runs, c)
                  for c in kept + extra]
    for rung, runs, config in rungs:
        with archs.targeting(arch), (only(config) if config is not None else contextlib.nullcontext()):
            result = run_rung("ch05", rung, runs)
        result["verdicts"] = verdicts(result, rung.bar_key)
        record["rungs"].append(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    print(f"\n{info.name}, configurations that fit {LIMIT // 1024} KiB:")
    for rung in record["rungs"]:
        v = rung["verdicts"]
        median = statistics.median(r["speedup"] for r in rung["runs"])
        print(f"  {rung['rung']}: median {median:.3f}x; {v['sm_86']['passed']}/{v['sm_86']['of']} pass the sm_86 bar "
              f"({v['sm_86']['bar']:.2f}), {v['default']['passed']}/{v['default']['of']} the default "
              f"({v['default']['bar']:.2f})")
    main_rungs = record["rungs"][:2]
    return 0 if all(r["verdicts"]["sm_86"]["passed"] == r["verdicts"]["sm_86"]["of"] for r in main_rungs) else 1


if __name__ == "__main__":
    sys.exit(main())
