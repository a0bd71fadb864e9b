"""Calibrate chapter 1's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch01.py --runs 10 --out assets/results/ch01-<gpu>/calibration.json
"""

from __future__ import annotations

import sys

from calibrate import Rung, main
from grader.chapters import ch01

SIZES = [1, 31, 1000, 1_000_003]
RUNGS = [
    Rung("1a one element per thread (naive_1a)", "naive_1a", ["vector-add-solution"], "vector_add",
         ch01.VECTOR_ADD, "1a", "pass", SIZES),
    Rung("1a float4 grid-stride (solution stretch)", "correct", ["vector-add-v4-solution"], "vector_add_v4",
         ch01.VECTOR_ADD, "1a-stretch", "pass", SIZES),
    Rung("1b fused, one kernel (solution)", "correct", ["fused-solution"], "fused_axpb_relu",
         ch01.FUSED, "1b", "pass", SIZES),
    Rung("1b three kernels (three_kernels_1b)", "three_kernels_1b", ["fused-solution"], "fused_axpb_relu",
         ch01.FUSED, "1b", "fail", SIZES),
]

if __name__ == "__main__":
    sys.exit(main("ch01", RUNGS))
