"""Calibrate chapter 6's pass bars on this GPU (see calibrate.py for what a run does).

    python assets/results/calibrate_ch06.py --runs 10 --out assets/results/ch06-<gpu>/ch06-calibration.json

Rungs: the solution's kernel (causal=False, D=64 and D=128) against naive torch (bar "6"), attention
in Triton that stores the scores (must miss "6"), the solution with causal=True against itself with
causal=False (bar "6-causal"), a kernel that masks the causal triangle without skipping it (must
miss "6-causal"), and the solution against torch SDPA (the stretch bar, reported only).
"""

from __future__ import annotations

import dataclasses
import sys

from calibrate import Rung, main
from grader.chapters import ch06
from submissions.build import launchers

CELLS = ["attention-solution"]
SIZES = [(1, 1, 1, 64), (2, 3, 333, 64), (1, 2, 1024, 128)]


def noncausal(fn):
    return ch06.bind(fn, False)


def causal(fn):
    return ch06.bind(fn, True)


D128 = dataclasses.replace(ch06.ATTENTION, speed_size=lambda: ch06._speed_size()[:3] + (128,))


def causal_vs_own(submission: str):
    """The causal exercise timed against this submission's own causal=False launch."""
    return ch06.causal_exercise(launchers("ch06", submission, CELLS)["attention"])


RUNGS = [
    Rung("6 flash forward, D=64 (solution)", "correct", CELLS, "attention", ch06.ATTENTION, "6", "pass",
         SIZES, wrap=noncausal),
    Rung("6 flash forward, D=128 (solution)", "correct", CELLS, "attention", D128, "6", "pass",
         SIZES, wrap=noncausal),
    Rung("6 scores stored in memory (naive_triton)", "naive_triton", CELLS, "attention", ch06.ATTENTION, "6",
         "fail", SIZES, wrap=noncausal),
    Rung("6-causal tiles after the diagonal skipped (solution)", "correct", CELLS, "attention",
         causal_vs_own("correct"), "6-causal", "pass", SIZES, wrap=causal),
    Rung("6-causal masked, not skipped (no_skip)", "no_skip", CELLS, "attention", causal_vs_own("no_skip"),
         "6-causal", "fail", SIZES, wrap=causal),
    Rung("6-stretch against torch SDPA (solution)", "correct", CELLS, "attention", ch06.VS_SDPA, "6-stretch",
         "pass", SIZES, wrap=noncausal),
]

if __name__ == "__main__":
    sys.exit(main("ch06", RUNGS))
