"""Calibrate chapter 8's block bar on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch08.py --runs 10 --out assets/results/ch08-<gpu>/ch08-calibration.json

The solution (the learner's fused kernels of chapters 5, 6 and 7) must clear "8b" in every run, and the
naive rung (chapter 5's naive 32x32 matmul in the block: tests/submissions/ch08/naive_tiles.py) must miss it
in every run. The unfused rung (the same kernels with their fusions taken out) is measured beside them. torch.compile's time is recorded beside each run (`others_speedup`), never graded.
"""

from __future__ import annotations

import sys

from calibrate import Rung, main

from grader.chapters import ch08

CELLS = ["matmul-paste", "attention-paste", "norm-paste", "block-solution"]
SIZES = [(1, 1, 64), (2, 17, 64), (1, 333, 128)]
RUNGS = [
    Rung("8b fused kernels: 5b epilogue, 6 flash attention, 7 add_rmsnorm (solution)", "correct", CELLS, "block",
         ch08.BLOCK, "8b", "pass", SIZES),
    Rung("8b chapter 5's naive matmul, 32x32 tiles, in both matmuls (naive_tiles)", "naive_tiles", CELLS, "block",
         ch08.BLOCK, "8b", "fail", SIZES),
    Rung("8b unfused kernels: 5a matmul + bias/GELU kernel, add + RMSNorm kernels (unfused)", "unfused", CELLS,
         "block", ch08.BLOCK, "8b", "fail", SIZES),
]

if __name__ == "__main__":
    sys.exit(main("ch08", RUNGS))
