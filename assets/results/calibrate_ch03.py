"""Calibrate chapter 3's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch03.py --runs 10 --out assets/results/ch03-<gpu>/calibration.json

The naive uncoalesced rung takes about a second per timing round at 4096^3; `--only` skips it. Two
simpler register-blocked kernels, tests/submissions/ch03/blocked_64x64.py (4x4 per thread) and
blocktile_1d.py (8x1), measured 0.32x on an H200 in the smoke run, just above the bar: they are
not rungs here, since the bar is set by the 8x8 textbook kernel.
"""

from __future__ import annotations

import sys

from calibrate import Rung, main
from grader.chapters import ch03

SIZES = [(1, 1, 1), (7, 13, 5), (129, 65, 33), (300, 200, 100), (256, 512, 384)]
RUNGS = [
    Rung("3 naive, uncoalesced (naive_uncoalesced)", "naive_uncoalesced", ["sgemm-solution"], "sgemm",
         ch03.SGEMM, "3", "fail", SIZES),
    Rung("3 naive, coalesced (naive_coalesced)", "naive_coalesced", ["sgemm-solution"], "sgemm",
         ch03.SGEMM, "3", "fail", SIZES),
    Rung("3 32x32 shared-memory tile (smem_tile_32)", "smem_tile_32", ["sgemm-solution"], "sgemm",
         ch03.SGEMM, "3", "fail", SIZES),
    Rung("3 128x128x8 block, 8x8 per thread (solution)", "correct", ["sgemm-solution"], "sgemm",
         ch03.SGEMM, "3", "pass", SIZES),
    Rung("3-stretch float4 + double buffering (solution stretch)", "correct",
         ["sgemm-solution", "sgemm-v2-solution"], "sgemm_v2", ch03.SGEMM, "3-stretch", "pass",
         SIZES + [(129, 68, 36)]),
    Rung("3-warptile float4 + double buffering (solution stretch sgemm_v2, the rung below)", "correct",
         ["sgemm-solution", "sgemm-v2-solution"], "sgemm_v2", ch03.SGEMM, "3-warptile", "fail",
         SIZES + [(129, 68, 36)]),
    Rung("3-warptile warp tiling (solution stretch sgemm_v3)", "correct",
         ["sgemm-solution", "sgemm-v3-solution"], "sgemm_v3", ch03.SGEMM, "3-warptile", "pass",
         SIZES + [(129, 68, 36)]),
]

if __name__ == "__main__":
    sys.exit(main("ch03", RUNGS))
