"""Calibrate chapter 4's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch04.py --runs 10 --out assets/results/ch04-<gpu>/calibration.json

The FMA-only rung is expected to miss the bar on an H100/H200 by speed alone; on GPUs whose
fp16 tensor-core rate is a small multiple of their fp32 rate it could clear it, which is why the
graded speed cell also requires tensor-core instructions (ch04.check_tensor_cores).
"""

from __future__ import annotations

import sys

from calibrate import Rung, main
from grader.chapters import ch04

SIZES = [(1, 1, 1), (17, 33, 9), (200, 312, 100), (256, 256, 256)]
GEMM = ch04.WMMA_GEMM
RUNGS = [
    Rung("4 one warp per 16x16 tile, global loads (global_wmma)", "global_wmma", ["wmma-solution"], "wmma_gemm",
         GEMM, "4", "fail", SIZES),
    Rung("4 smem-staged, one chunk loaded and stored at a time (serial_loads)", "serial_loads", ["wmma-solution"],
         "wmma_gemm", GEMM, "4", "fail", SIZES),
    Rung("4 smem-staged 128x128x32, 8 warps, all loads in flight (solution)", "correct", ["wmma-solution"],
         "wmma_gemm", GEMM, "4", "pass", SIZES),
    Rung("4 the same, next slice prefetched into registers (register_prefetch)", "register_prefetch",
         ["wmma-solution"], "wmma_gemm", GEMM, "4", "pass", SIZES),
    Rung("4 cp.async double buffering (solution stretch)", "correct", ["wmma-async-solution"], "wmma_gemm_async",
         GEMM, "4-stretch", "pass", SIZES),
    Rung("4 FMA units only (fma_only)", "fma_only", ["wmma-solution"], "wmma_gemm", GEMM, "4", "fail", SIZES),
]

if __name__ == "__main__":
    sys.exit(main("ch04", RUNGS))
