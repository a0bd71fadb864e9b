"""Calibrate chapter 7's bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch07.py --runs 10 --out assets/results/ch07-<gpu>/calibration.json

7a: the solution (one block per row, online statistics, 16-byte loads) must clear "7a" in every run; the
same kernel with 4-byte loads (tests/submissions/ch07/scalar_7a.py) and a three-pass kernel with the
interleaved tree (three_pass_7a.py) must miss it in every run. 7b: the fused kernel must clear "7b" in
every run and the unfused pair of kernels (unfused_7b.py) miss it in every run. The GroupNorm + SiLU
stretch is measured against its reported bar. torch.compile's time is recorded beside 7b and 7c
(`others_speedup`), never graded.
"""

from __future__ import annotations

import sys

from calibrate import Rung, main

from grader.chapters import ch07


RUNGS = [
    Rung("7a online softmax, 16-byte loads, 1,024 threads (solution)", "correct", ["softmax-solution"], "softmax",
         ch07.SOFTMAX, "7a", "pass"),
    Rung("7a the same with 4-byte loads (scalar_7a)", "scalar_7a", ["softmax-solution"], "softmax",
         ch07.SOFTMAX, "7a", "fail"),
    Rung("7a three passes, interleaved tree (three_pass_7a)", "three_pass_7a", ["softmax-solution"], "softmax",
         ch07.SOFTMAX, "7a", "fail"),
    Rung("7b fused residual add + RMSNorm (solution)", "correct", ["norm-solution"], "add_rmsnorm",
         ch07.ADD_RMSNORM, "7b", "pass"),
    Rung("7b add kernel, then norm kernel (unfused_7b)", "unfused_7b", ["norm-solution"], "add_rmsnorm",
         ch07.ADD_RMSNORM, "7b", "fail"),
    Rung("7c GroupNorm + SiLU, two passes in one program (stretch solution)", "correct", ["stretch-solution"],
         "groupnorm_silu", ch07.GROUPNORM_SILU, "7-stretch", "pass"),
]

if __name__ == "__main__":
    sys.exit(main("ch07", RUNGS))
