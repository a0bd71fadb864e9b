"""Calibrate chapter 5's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch05.py --runs 10 --out assets/results/ch05-<gpu>/ch05-calibration.json

The first run of each Triton rung compiles and autotunes (outside the timed rounds); Triton caches
both, so later runs of this script start faster.
"""

from __future__ import annotations

import sys

from calibrate import Rung, main
from grader.chapters import ch05

SIZES = [(1, 1, 1), (31, 33, 35), (127, 129, 257), (512, 512, 512), (2049, 1023, 4100)]
RUNGS = [
    Rung("5a naive: 32x32 tiles, row-major, no autotuning (naive_5a)", "naive_5a", ["matmul-solution"], "matmul",
         ch05.MATMUL, "5a", "fail", SIZES),
    Rung("5a large tiles, row-major, 4 configs (ungrouped_5a)", "ungrouped_5a", ["matmul-solution"], "matmul",
         ch05.MATMUL, "5a", "pass", SIZES),
    Rung("5a grouped, 4 autotuned configs (solution)", "correct", ["matmul-solution"], "matmul",
         ch05.MATMUL, "5a", "pass", SIZES),
    Rung("5b fused bias + GELU epilogue (solution)", "correct", ["matmul-solution", "fused-solution"],
         "matmul_bias_act", ch05.FUSED, "5b", "pass", SIZES),
    Rung("5b unfused: 5a matmul, then the learner's own bias and GELU kernels in place (unfused_5b)", "unfused_5b",
         ["matmul-solution", "fused-solution"], "matmul_bias_act", ch05.FUSED, "5b", "fail", SIZES),
    Rung("5b unfused: 5a matmul, then torch's in-place bias add and GELU (the notebook's `unfused` cell)", "correct",
         ["matmul-solution"], "matmul", ch05.FUSED, "5b", "fail", SIZES, wrap=ch05.with_torch_epilogue),
    Rung("5a-stretch split-K at 512x512x65536 (solution stretch)", "correct", ["matmul-solution", "splitk-solution"],
         "matmul_splitk", ch05.SPLIT_K, "5a-stretch", "pass", SIZES),
    Rung("5a-stretch one program per tile at 512x512x65536 (solution 5a)", "correct", ["matmul-solution"], "matmul",
         ch05.SPLIT_K, "5a-stretch", "fail", SIZES),
]

if __name__ == "__main__":
    sys.exit(main("ch05", RUNGS))
