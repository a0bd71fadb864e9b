"""Calibrate chapter 2's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch02.py --runs 10 --out assets/results/ch02-<gpu>/ch02-calibration.json
"""

from __future__ import annotations

import sys

from calibrate import Rung, main
from grader.chapters import ch02

SHAPES = [(1, 1), (1, 1000), (1000, 1), (31, 33), (100, 37), (4097, 513)]
RUNGS = [
    Rung("2 naive, one thread per element (naive)", "naive", ["transpose-solution"], "transpose",
         ch02.TRANSPOSE, "2", "fail", SHAPES),
    Rung("2 32x32 tile, 32x8 threads, no padding (unpadded_tile)", "unpadded_tile", ["transpose-solution"],
         "transpose", ch02.TRANSPOSE, "2", "fail", SHAPES),
    Rung("2 padded tile, one element per thread (one_per_thread_tile)", "one_per_thread_tile",
         ["transpose-solution"], "transpose", ch02.TRANSPOSE, "2", "fail", SHAPES),
    Rung("2 padded [32][33] tile, 32x8 threads, 4 rows each (solution)", "correct", ["transpose-solution"],
         "transpose", ch02.TRANSPOSE, "2", "pass", SHAPES),
    Rung("2 float4 loads and stores (solution stretch)", "correct", ["transpose-solution", "transpose-wide-solution"],
         "transpose_wide", ch02.TRANSPOSE, "2-stretch", "pass", SHAPES + [(2052, 516), (36, 100)]),
]

if __name__ == "__main__":
    sys.exit(main("ch02", RUNGS))
