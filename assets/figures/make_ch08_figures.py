"""Draw chapter 8's two figures.

    python assets/figures/make_ch08_figures.py

writes, beside this script:
- ch08_amdahl.png: the block's end-to-end speedup against the speedup of one op, for several shares of
  the time, with each curve's ceiling 1 / (1 - share)
- ch08_decision_tree.png: the order of questions and tools: profile and the three conditions, a library,
  torch.compile, Triton, CUTLASS / CuTe, raw CUDA
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]
from make_ch01_figures import _arrow, _box, save_figures

from grader.chapters.ch08 import MIN_SHARE, amdahl_reference

DPI = 110
SHARES = (0.05, MIN_SHARE, 0.25, 0.5, 0.75, 0.9)
ASK, YES, NO = "#eef3f8", "#b3ded8", "#f4c7a1"


def draw_amdahl() -> plt.Figure:
    speedups = np.logspace(0, 2, 200)
    fig, ax = plt.subplots(figsize=(7, 4))
    for share in SHARES:
        line, = ax.plot(speedups, [amdahl_reference(share, s) for s in speedups],
                        label=f"op at {share:.0%} of the time", linewidth=2.2 if share == MIN_SHARE else 1.4)
        limit = 1 / (1 - share)
        ax.axhline(limit, color=line.get_color(), linestyle=":", linewidth=1)
        ax.text(105, limit, f"{limit:.2f}x", va="center", fontsize=8, color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1, 100)
    ax.set_yticks([1, 1.5, 2, 3, 5, 10], ["1", "1.5", "2", "3", "5", "10"])
    ax.set_xlabel("speedup of the one op (log)")
    ax.set_ylabel("speedup of the whole block (log)")
    ax.set_title("Amdahl's law: the rest of the block sets the limit (dotted)")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


STEPS = (
    ("Profile the block. Is the op hot (>= 10% of the time),\nbelow 60% of its ceiling, with a stable shape?",
     "no: leave it"),
    ("Does a library do it? cuBLAS / cuBLASLt, cuDNN,\ntorch SDPA, NCCL", "yes: call it"),
    ("Does torch.compile fuse it? (Inductor writes Triton;\nFlexAttention for a new attention score or mask)",
     "yes: compile it"),
    ("Does Triton express it, fast enough?\n(tiles; the compiler places memory and MMAs)", "yes: Triton kernel"),
    ("Does CUTLASS / CuTe express it? (warp roles, TMA and\nwgmma pipelines by hand; C++, or CuTe DSL in Python)", "yes: CUTLASS"),
    ("Nothing above expresses it", "raw CUDA C++ / PTX"),
)


def draw_decision_tree() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8.5, 6.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.3, len(STEPS) * 1.05)
    ax.axis("off")
    for i, (question, answer) in enumerate(STEPS):
        y = (len(STEPS) - 1 - i) * 1.05
        last = i == len(STEPS) - 1
        _box(ax, 0.2, y, 5.8, 0.75, ASK if not last else YES)
        if not last:
            ax.text(3.1, y + 0.375, question, ha="center", va="center", fontsize=8.5)
            _box(ax, 7.0, y + 0.1, 2.8, 0.55, NO if i == 0 else YES)
            ax.text(8.4, y + 0.375, answer, ha="center", va="center", fontsize=8.5)
            _arrow(ax, (6.0, y + 0.375), (7.0, y + 0.375), "black")
            _arrow(ax, (3.1, y), (3.1, y - 0.3), "black")
            ax.text(3.25, y - 0.17, "yes" if i == 0 else "no", fontsize=8)
        else:
            ax.text(3.1, y + 0.375, question + ": " + answer, ha="center", va="center", fontsize=8.5)
    ax.set_title("Should you write this kernel? Ask in this order.", fontsize=11)
    fig.tight_layout()
    return fig


def main() -> None:
    save_figures((("ch08_amdahl.png", draw_amdahl), ("ch08_decision_tree.png", draw_decision_tree)), DPI)


if __name__ == "__main__":
    main()
