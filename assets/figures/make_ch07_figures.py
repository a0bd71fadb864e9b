"""Draw chapter 7's three figures.

    python assets/figures/make_ch07_figures.py

writes, beside this script:
- ch07_reduction_tree.png: a block reduction of 16 values by 16 threads over 4 steps, interleaved
  addressing (working threads scattered, then bank conflicts) beside sequential addressing (working threads
  contiguous, consecutive addresses)
- ch07_online_softmax.png: a row of 8 numbers in 4 parts, each with its (m, s), merged pairwise in a tree
  (like a warp's shuffles) into the row's (m, s), with the merge rule and the empty part
- ch07_block_per_row.png: exercise 7a's layout: one block per row, thread t reading float4 chunks t, t+T,
  t+2T, ...; then shuffles within each warp and one trip through shared memory to warp 0
"""

from __future__ import annotations

import math
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
EDGE, LINE = "#444444", "#555555"
N = 16  # values, and threads, in the reduction figure


# ------------------------------------------------------------------------------- reduction tree

def _reduction(ax, title, steps, note):
    """One panel: a row of N slots per step; `steps` lists (stride, [(target, source), ...])."""
    w, h, gap = 0.82, 0.42, 1.0  # box width and height; rows are `gap` apart
    ax.set_xlim(-2.2, N + 0.2)
    ax.set_ylim(-2.3, len(steps) * gap + 1.0)
    ax.axis("off")
    ax.set_title(title, fontsize=9, weight="bold", pad=2)
    for i in range(0, N, 4):
        ax.text(i + w / 2, len(steps) * gap + h + 0.08, f"t{i}", ha="center", va="bottom", fontsize=6.5)
    for row in range(len(steps) + 1):
        y = (len(steps) - row) * gap
        working = {t for t, _ in steps[row][1]} if row < len(steps) else set()
        for i in range(N):
            face = WORK if i in working else (DONE if row == len(steps) and i == 0 else DATA)
            _box(ax, i, y, w, h, face, edge=EDGE, lw=0.5)
        if row < len(steps):
            stride, pairs = steps[row]
            ax.text(-0.25, y + h / 2, f"s = {stride}", ha="right", va="center", fontsize=7.5)
            for t, src in pairs:  # slot src is added into slot t; the sum lands in the next row
                _arrow(ax, (src + w / 2, y), (t + w / 2, y - gap + h), LINE, lw=0.6)
        else:
            ax.text(-0.25, y + h / 2, "sum", ha="right", va="center", fontsize=7.5)
    ax.text(N / 2 - 0.6, -0.3, note, ha="center", va="top", fontsize=7.2, linespacing=1.35)


def draw_reduction_tree() -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(8, 4.2))
    interleaved = [(s, [(t, t + s) for t in range(0, N, 2 * s)]) for s in (1, 2, 4, 8)]
    sequential = [(s, [(t, t + s) for t in range(s)]) for s in (8, 4, 2, 1)]
    _reduction(axes[0], "interleaved addressing\nthread t works if t % (2s) == 0", interleaved,
               "working threads (orange) are scattered across the warp:\n"
               "divergence: every warp stays busy with few lanes active.\n"
               "Giving the work to threads k = 0, 1, ... at slot 2s·k instead\n"
               "puts their addresses 2s words apart: as s grows, more\n"
               "of them land in the same bank (bank conflicts).")
    _reduction(axes[1], "sequential addressing\nthread t works if t < s", sequential,
               "working threads are contiguous: whole warps finish\n"
               "and leave (in a real block, once s ≤ 32 only warp 0 works).\n"
               "Thread t touches slots t and t + s: consecutive\n"
               "words, one bank per lane, no conflicts.")
    fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor=EDGE, linewidth=0.5) for c in
                        (WORK, DATA, DONE)],
               labels=["slot of a working thread (it adds the arrow's slot into it)", "idle", "the block's sum"],
               loc="lower center", ncol=3, fontsize=7, frameon=False, handlelength=1.2)
    fig.suptitle("A block reduction of 16 values by 16 threads in 4 steps (s: the stride)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


# ------------------------------------------------------------------------------- online softmax

ROW = (1.0, 3.0, 2.0, 0.0, 5.0, 1.0, 4.0, 2.0)


def _stats(xs):
    m = max(xs)
    return m, sum(math.exp(x - m) for x in xs)


def _merge(a, b):
    m = max(a[0], b[0])
    return m, a[1] * math.exp(a[0] - m) + b[1] * math.exp(b[0] - m)


def draw_online_softmax() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    ax.axis("off")
    ax.set_xlim(0, 12)
    ax.set_ylim(0.05, 7.2)
    # the row, in 4 parts of 2 numbers
    cell, cx0 = 1.0, 7.1  # cx0: the tree's centre
    x0 = cx0 - len(ROW) * cell / 2 - 1.5 * 0.2
    xs = [x0 + i * cell + (i // 2) * 0.2 for i in range(len(ROW))]
    for x, v in zip(xs, ROW):
        _box(ax, x, 6.3, cell, 0.5, DATA, edge=EDGE, lw=0.6)
        ax.text(x + cell / 2, 6.55, f"{v:g}", ha="center", va="center", fontsize=9)
    ax.text(xs[0] - 0.15, 6.55, "x", ha="right", va="center", fontsize=9, style="italic")
    parts = [_stats(ROW[i:i + 2]) for i in range(0, len(ROW), 2)]
    centres = [xs[2 * k] + cell for k in range(4)]

    def node(cx, y, label, stats, face):
        _box(ax, cx - 1.05, y, 2.1, 0.8, face, edge=EDGE, lw=0.7)
        ax.text(cx, y + 0.4, f"{label}\nm = {stats[0]:g},  s = {stats[1]:.3f}", ha="center", va="center",
                fontsize=7.5)

    for k, (cx, st) in enumerate(zip(centres, parts)):
        node(cx, 4.85, f"part {k + 1}", st, IDLE)
        _arrow(ax, (cx, 6.3), (cx, 5.65), LINE, lw=1.0)
    pairs = [_merge(parts[0], parts[1]), _merge(parts[2], parts[3])]
    pair_centres = [(centres[0] + centres[1]) / 2, (centres[2] + centres[3]) / 2]
    for j, (cx, st) in enumerate(zip(pair_centres, pairs)):
        node(cx, 3.25, f"half {j + 1} = merge({2 * j + 1}, {2 * j + 2})", st, WORK)
        for k in (2 * j, 2 * j + 1):
            _arrow(ax, (centres[k], 4.85), (cx, 4.05), LINE, lw=1.0)
    row = _merge(*pairs)
    node(cx0, 1.65, "the row's (m, s)", row, DONE)
    for cx in pair_centres:
        _arrow(ax, (cx, 3.25), (cx0, 2.45), LINE, lw=1.0)
    # the levels, as a warp's shuffles would do them
    for y, text in ((5.25, "each part:\nits own max m,\ns = Σ exp(x − m)"), (3.65, "step 1\n(shuffle offset 1)"),
                    (2.05, "step 2\n(shuffle offset 2)")):
        ax.text(0.0, y, text, ha="left", va="center", fontsize=7.2, color="#333333")
    ax.text(6, 0.75, "merge((m1, s1), (m2, s2)):   m = max(m1, m2),   s = s1·exp(m1 − m) + s2·exp(m2 − m)\n"
            "an empty part is (m = −inf, s = 0); every exponent m_i − m is ≤ 0, so nothing overflows",
            ha="center", va="center", fontsize=8, bbox={"facecolor": "white", "edgecolor": "black", "pad": 5})
    ax.text(12, 1.85, f"check: Σ exp(x − {row[0]:g})\nover all 8 = {sum(math.exp(v - row[0]) for v in ROW):.3f}",
            ha="right", va="center", fontsize=7.2, color="#333333")
    ax.set_title("Online softmax: partial (max, sum) pairs merge in any order, pairwise in a tree", fontsize=10)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------- block per row

def draw_block_per_row() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.axis("off")
    ax.set_xlim(-2.6, 17.4)
    ax.set_ylim(-2.9, 7.4)
    dy = 2.2  # the three stages below, lifted
    threads = ["t0", "t1", "t2", "…", "tT−1"]
    colours = ["#f4c7a1", "#b3ded8", "#d9e7f5", "white", "#e8d5f0"]
    chunks, w, h = 15, 0.92, 0.55
    # the matrix: 4 rows drawn, the row of block 1 coloured by the thread that reads each chunk
    for r in range(4):
        y = 6.0 - r * 0.75
        ax.text(-0.2, y + h / 2, f"row {r} → block {r}", ha="right", va="center", fontsize=7.5)
        for c in range(chunks):
            k = c % len(threads)
            _box(ax, c, y, w, h, colours[k] if r == 1 else IDLE, edge=EDGE, lw=0.5)
            if r == 1:
                ax.text(c + w / 2, y + h / 2, threads[k], ha="center", va="center", fontsize=6.5)
        ax.text(chunks + 0.1, y + h / 2, "…", ha="left", va="center", fontsize=9)
    ax.text(-0.2, 6.0 - 4 * 0.75 + h / 2, "… rows", ha="right", va="center", fontsize=7.5)
    y1 = 6.0 - 0.75
    ax.text(chunks / 2, 6.0 + h + 0.15, "cols  →   (each box: one float4, 16 bytes = 4 floats)", ha="center",
            va="bottom", fontsize=7.5)
    ax.text(chunks + 0.8, y1 + h / 2, "thread t reads chunks\nt, t+T, t+2T, ...\n(T = blockDim.x)",
            ha="left", va="center", fontsize=7.2)

    # 1. per thread
    _box(ax, -2.4, dy - 2.2, 4.2, 2.3, WORK, edge=EDGE, lw=0.7)
    ax.text(-0.3, dy - 1.05, "1. each of the T\nthreads keeps its\nown online (m, s)\nover the chunks\nit read",
            ha="center", va="center", fontsize=7.5)
    _arrow(ax, (0.9, 3.7), (0.9, dy + 0.15), LINE, lw=0.9)

    # 2. one warp's shuffle tree: 32 lanes, offsets 16, 8, 4, 2, 1; drawn lanes are valid partials
    lx, lw_, top = 2.7, 0.16, dy - 0.2
    _box(ax, lx - 0.3, dy - 5.0, 32 * lw_ + 1.7, 5.1, DATA, edge=EDGE, lw=0.7)
    ax.text(lx + 16 * lw_, dy + 0.3, "2. in each warp: 5 × __shfl_down_sync", ha="center", va="bottom", fontsize=7.5)
    for level, live in enumerate((32, 16, 8, 4, 2, 1)):
        y = top - 0.45 - level * 0.6
        for lane in range(32):
            _box(ax, lx + lane * lw_, y, lw_, 0.3, "#3b75af" if lane < live else "white", edge="#999999", lw=0.3)
        label = "32 lanes" if level == 0 else f"offset {32 // 2 ** level}"
        ax.text(lx + 32 * lw_ + 0.1, y + 0.15, label, ha="left", va="center", fontsize=6.5)
    ax.text(lx + 16 * lw_, dy - 4.9, "blue: lanes still holding a pair;\nlane l merges lane l + offset;\n"
            "lane 0 ends with the warp's (m, s)",
            ha="center", va="bottom", fontsize=6.8)

    # 3. shared memory to warp 0
    sx = 10.3
    _box(ax, sx, dy - 2.2, 7.0, 2.3, DONE, edge=EDGE, lw=0.7)
    ax.text(sx + 3.5, dy - 0.15, "3. lane 0 of warp w writes wm[w], ws[w]", ha="center", va="top", fontsize=7.5)
    for k in range(8):
        _box(ax, sx + 0.5 + k * 0.55, dy - 1.05, 0.55, 0.4, "white" if k < 6 else IDLE, edge=EDGE, lw=0.5)
        ax.text(sx + 0.5 + k * 0.55 + 0.275, dy - 0.85, f"w{k}" if k < 6 else "", ha="center", va="center",
                fontsize=6)
    ax.text(sx + 0.5 + 8 * 0.55 + 0.1, dy - 0.85, "shared\nmemory", ha="left", va="center", fontsize=6.8)
    ax.text(sx + 3.5, dy - 1.25, "__syncthreads(); warp 0 merges the T/32 pairs\n(a lane with no warp takes "
            "(−inf, 0)), writes\nthe row's (m, s) back; __syncthreads()", ha="center", va="top", fontsize=6.8)
    _arrow(ax, (1.8, dy - 1.05), (lx - 0.3, dy - 1.05), "black", lw=1.0)
    _arrow(ax, (lx + 32 * lw_ + 1.4, dy - 1.05), (sx, dy - 1.05), "black", lw=1.0)
    ax.text(sx + 3.5, dy - 3.05, "4. every thread reads its chunks again\n(mostly from DRAM) and writes exp(x − m) / s",
            ha="center", va="center", fontsize=7.2)
    ax.set_title("Exercise 7a: one block per row", fontsize=10)
    fig.tight_layout()
    return fig


def main() -> None:
    save_figures((("ch07_reduction_tree.png", draw_reduction_tree), ("ch07_online_softmax.png", draw_online_softmax),
                  ("ch07_block_per_row.png", draw_block_per_row)), DPI)


if __name__ == "__main__":
    main()
