"""What Dask's nanny's MALLOC_TRIM_THRESHOLD_ costs a Triton compile, on a CPU: a tiled fp16 matmul kernel of the
kind chapter 5 asks for, compiled for sm_90 (Triton's cross-compiler: no GPU needed) in 12 configurations, each
run a fresh process with a fresh Triton cache, with the variable unset and set to distributed's default (65536),
in alternating pairs. Prints each run's wall, user and system CPU seconds (the process and its ptxas children)
and minor page faults, then the medians.

    python3 assets/results/class-grading/compile_malloc_trim.py [PAIRS] > compile-malloc-trim-cpu/runs.md

Why it matters: under `ladder grade --gpus N` (and any Dask worker started by a nanny) every process a student's
grading starts inherits the nanny's pre-spawn environment unless the grader gives it the coordinator's
(grader.classgrade.task.environ_to_ship). Setting the trim threshold also turns off glibc's adaptive mmap
threshold, so a compile's large, short-lived allocations go back to the kernel and fault in again.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

COMPILE = r'''
import os, resource, sys, time, warnings
warnings.simplefilter("ignore")
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def matmul(a, b, c, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_tile = tl.load(a + rows[:, None] * s_am + (k0 + ks)[None, :] * s_ak,
                         mask=(rows[:, None] < M) & ((k0 + ks)[None, :] < K), other=0.0)
        b_tile = tl.load(b + (k0 + ks)[:, None] * s_bk + cols[None, :] * s_bn,
                         mask=((k0 + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a_tile, b_tile)
    tl.store(c + rows[:, None] * s_cm + cols[None, :] * s_cn, acc.to(tl.float16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))

signature = {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32", "K": "i32", "s_am": "i32",
             "s_ak": "constexpr", "s_bk": "i32", "s_bn": "constexpr", "s_cm": "i32", "s_cn": "constexpr",
             "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
start = time.perf_counter()
tiles = [(128, 128, 32), (128, 256, 64), (64, 128, 64), (128, 64, 32), (64, 64, 64), (256, 128, 64)]
configs = [(tile, stages) for tile in tiles for stages in (3, 4)][:int(sys.argv[1])]
for (bm, bn, bk), stages in configs:
    constexprs = {"s_ak": 1, "s_bn": 1, "s_cn": 1, "BM": bm, "BN": bn, "BK": bk}
    triton.compile(ASTSource(fn=matmul, signature=signature, constexprs=constexprs),
                   target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 8 if bm * bn >= 128 * 128 else 4, "num_stages": stages})
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - start, me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime,
      me.ru_minflt + kids.ru_minflt)
'''


def one(trim: str | None, configs: int = 12) -> tuple[float, float, float, int]:
    """(wall s, user s, system s, minor faults) of one fresh process compiling the first `configs` configurations."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    if trim is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = trim
    with tempfile.TemporaryDirectory() as folder:
        env["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
        script = os.path.join(folder, "compile.py")     # a file: triton.jit reads the kernel's source from it
        with open(script, "w") as f:
            f.write(COMPILE)
        out = subprocess.run([sys.executable, script, str(configs)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the compile failed:\n{out.stderr}")
    wall, user, system, faults = out.stdout.split()
    return float(wall), float(user), float(system), int(faults)


def main() -> int:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    runs: dict[str, list] = {"unset": [], "65536": []}
    print("| run | MALLOC_TRIM_THRESHOLD_ | wall, s | user, s | system, s | minor faults |\n|---|---|---|---|---|---|")
    for i in range(pairs):
        for label, trim in (("unset", None), ("65536", "65536")):
            r = one(trim)
            runs[label].append(r)
            print(f"| {i + 1} | {label} | {r[0]:.2f} | {r[1]:.2f} | {r[2]:.2f} | {r[3]} |", flush=True)
    print("\n| MALLOC_TRIM_THRESHOLD_ | median wall, s | median CPU (user + system), s | median minor faults |\n"
          "|---|---|---|---|")
    for label, rs in runs.items():
        print(f"| {label} | {statistics.median(r[0] for r in rs):.2f} | "
              f"{statistics.median(r[1] + r[2] for r in rs):.2f} | {statistics.median(r[3] for r in rs):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
