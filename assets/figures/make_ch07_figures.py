"""Draw chapter 7's three figures.

    python assets/figures/make_ch07_figures.py

writes, beside this script:
- ch07_reduction_tree.png: a block reduction of 16 values over 4 steps, interleaved addressing (working
  threads scattered) beside sequential addressing (working threads contiguous)
- ch07_online_softmax.png: four parts of a row, each with its (m, s), merged pairwise in a tree
- ch07_block_per_row.png: exercise 7a's layout: one block per row, threads striding over float4 chunks,
  then shuffles within warps and one trip through shared memory
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]
from make_ch01_figures import _arrow, _box, save_figures

DPI = 110
IDLE, WORK, DATA, DONE = "#f2f2f2", "#f4c7a1", "#d9e7f5", "#b3ded8"
N = 16


def _tree(ax, x0, title, steps, note):
    """One reduction: a row of N slots per step; `steps` lists (stride, [(target, source), ...])."""
    ax.text(x0 + N / 2, len(steps) + 1.55, title, ha="center", fontsize=10, weight="bold")
    for row in range(len(steps) + 1):
        y = len(steps) - row
        working = {t for t, _ in steps[row][1]} if row < len(steps) else set()
        for i in range(N):
            face = WORK if i in working else (DONE if row == len(steps) and i == 0 else DATA)
            _box(ax, x0 + i, y, 0.9, 0.6, face, lw=0.6)
        if row < len(steps):
            stride, pairs = steps[row]
            ax.text(x0 - 0.3, y + 0.3, f"s={stride}", ha="right", va="center", fontsize=8)
            for t, src in pairs:
                _arrow(ax, (x0 + src + 0.45, y), (x0 + t + 0.45, y - 0.4), "#555555", lw=0.8)
    ax.text(x0 + N / 2, -0.75, note, ha="center", va="top", fontsize=8.5)


def draw_reduction_tree() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(12, 4.6))
    ax.axis("off")
    interleaved = [(s, [(t, t + s) for t in range(0, N, 2 * s)]) for s in (1, 2, 4, 8)]
    sequential = [(s, [(t, t + s) for t in range(s)]) for s in (8, 4, 2, 1)]
    _tree(ax, 0, "interleaved addressing: thread t works when t % 2s == 0", interleaved,
          "working threads (orange) are scattered across the warp: every warp issues every step\n"
          "(divergence); written as k = 2*s*t, the addresses are 2s apart: bank conflicts")
    _tree(ax, N + 3, "sequential addressing: thread t works when t < s", sequential,
          "working threads are contiguous: whole warps finish and leave;\n"
          "lane t touches word t: one bank each, no conflicts")
    ax.set_xlim(-1.5, 2 * N + 4)
    ax.set_ylim(-2.0, 6.2)
    fig.tight_layout()
    return fig


def draw_online_softmax() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 4.4))
    ax.axis("off")
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 6.4)
    parts = [("x[0:4]", "m1, s1"), ("x[4:8]", "m2, s2"), ("x[8:12]", "m3, s3"), ("x[12:16]", "m4, s4")]
    for i, (label, stats) in enumerate(parts):
        x = 0.4 + 3 * i
        _box(ax, x, 5.0, 2.4, 0.9, DATA)
        ax.text(x + 1.2, 5.45, f"{label}\n({stats})", ha="center", va="center", fontsize=8.5)
    for j, label in enumerate(("merge(1, 2)", "merge(3, 4)")):
        x = 1.9 + 6 * j
        _box(ax, x, 3.2, 2.4, 0.8, WORK)
        ax.text(x + 1.2, 3.6, label, ha="center", va="center", fontsize=8.5)
        for k in range(2):
            _arrow(ax, (0.4 + 3 * (2 * j + k) + 1.2, 5.0), (x + 1.2, 4.0), "#555555")
    _box(ax, 4.9, 1.5, 2.4, 0.8, DONE)
    ax.text(6.1, 1.9, "(m, s) of the row", ha="center", va="center", fontsize=8.5)
    _arrow(ax, (3.1, 3.2), (6.1, 2.3), "#555555")
    _arrow(ax, (9.1, 3.2), (6.1, 2.3), "#555555")
    ax.text(6.0, 0.55, "merge((m1, s1), (m2, s2)):  m = max(m1, m2),  s = s1·exp(m1 − m) + s2·exp(m2 − m)\n"
            "an empty part is (−inf, 0); only differences m_i − m (never above 0) are exponentiated",
            ha="center", va="center", fontsize=9, bbox={"facecolor": "white", "edgecolor": "black"})
    ax.set_title("Online softmax statistics: each part keeps its max m and sum s = Σ exp(x − m)", fontsize=10)
    fig.tight_layout()
    return fig


def draw_block_per_row() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(11, 4.6))
    ax.axis("off")
    ax.set_xlim(-2.2, 20)
    ax.set_ylim(-3.2, 5.2)
    rows, chunks, threads = 4, 16, 4
    colours = ["#f4c7a1", "#b3ded8", "#d9e7f5", "#e8d5f0"]
    for r in range(rows):
        y = 4 - r
        ax.text(-0.3, y + 0.3, f"row {r}: block {r}", ha="right", va="center", fontsize=8.5)
        for c in range(chunks):
            _box(ax, c, y, 0.95, 0.6, colours[c % threads] if r == 1 else IDLE, lw=0.5)
            if r == 1:
                ax.text(c + 0.47, y + 0.3, f"t{c % threads}", ha="center", va="center", fontsize=7)
    ax.text(chunks / 2, 5.0, "each box: one 16-byte float4 (4 floats); in block 1, thread t reads chunks t, t+T, t+2T, ... "
            "(T = blockDim.x, 4 here)", ha="center", fontsize=8.5)
    _box(ax, 1.0, -0.4, 5.5, 1.0, WORK)
    ax.text(3.75, 0.1, "each thread: its own online (m, s)\nover the chunks it read", ha="center", va="center",
            fontsize=8.5)
    _box(ax, 7.5, -0.4, 5.0, 1.0, DATA)
    ax.text(10.0, 0.1, "5 × __shfl_down_sync: one (m, s)\nper warp, in lane 0", ha="center", va="center", fontsize=8.5)
    _box(ax, 13.5, -0.4, 6.0, 1.0, DONE)
    ax.text(16.5, 0.1, "lane 0s write wm[warp], ws[warp];\n__syncthreads(); warp 0 merges them", ha="center",
            va="center", fontsize=8.5)
    _arrow(ax, (6.5, 0.1), (7.5, 0.1), "black")
    _arrow(ax, (12.5, 0.1), (13.5, 0.1), "black")
    _arrow(ax, (8.0, 2.9), (3.75, 0.6), "#555555")
    ax.text(9.5, -1.7, "__syncthreads(); every thread reads (m, s), then reads its chunks again (mostly from L2) "
            "and writes exp(x − m) / s", ha="center", fontsize=8.5)
    ax.set_title("Exercise 7a: one block per row", fontsize=10)
    fig.tight_layout()
    return fig


def main() -> None:
    save_figures((("ch07_reduction_tree.png", draw_reduction_tree), ("ch07_online_softmax.png", draw_online_softmax),
                  ("ch07_block_per_row.png", draw_block_per_row)), DPI)


if __name__ == "__main__":
    main()
