"""Draw chapter 6's four figures.

    python assets/figures/make_ch06_figures.py

writes, beside this script:
- ch06_naive.png: naive attention's data flow, with the two N x N matrices it keeps in GPU memory
- ch06_online_softmax.png: one row of scores read a tile at a time: running max, running sum, rescaling
- ch06_tiling.png: which score tiles one program computes, and which a causal kernel masks or skips
- ch06_backward.png: the tiles of P each backward kernel recomputes: dK/dV walks down a column, dQ along a row
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110

SMALL = "#bcd3ea"     # N x D operands: small, read once
BIG = "#f3b27a"       # N x N intermediates: the problem
ONCHIP = "#9fd69b"    # tiles that live in registers / shared memory
SKIP = "#eeeeee"
MASKED = "#f6d55c"


def _box(ax, x, y, w, h, face, text="", edge="black", lw=1.2, fontsize=10, hatch=None, z=1, color="black"):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw, hatch=hatch, zorder=z))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, zorder=z + 1,
                color=color)


def _arrow(ax, start, end, color="black", lw=1.5):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, linewidth=lw,
                                 shrinkA=2, shrinkB=2, zorder=5))


def draw_naive() -> plt.Figure:
    """Q, K, V are N x D; S and P are N x N. Proportions for N = 4096, D = 64 would make Q a sliver,
    so N = 8 D here; the captions give the real sizes."""
    fig, ax = plt.subplots(figsize=(12, 4.6))
    ax.set_xlim(-0.5, 25.5)
    ax.set_ylim(-2.6, 7.9)
    ax.axis("off")
    n, d = 6.4, 0.8
    y0 = 0.0
    _box(ax, 0, y0, d, n, SMALL, "Q\nN×D", fontsize=9)
    _box(ax, 1.6, y0 + n + 0.3, n, d, SMALL, "Kᵀ   D×N", fontsize=9)
    _box(ax, 1.6, y0, n, n, BIG)
    ax.text(1.6 + n / 2, y0 + n / 2, "S = QKᵀ/√D\nN×N scores\n\nfp16: 2 bytes each", ha="center", va="center",
            fontsize=10)
    _arrow(ax, (1.6 + n, y0 + n / 2), (10.3, y0 + n / 2))
    ax.text(9.15, y0 + n / 2 + 0.4, "softmax\nof each row", ha="center", va="bottom", fontsize=9)
    _box(ax, 10.4, y0, n, n, BIG)
    ax.text(10.4 + n / 2, y0 + n / 2, "P = softmax(S)\nN×N probabilities\n\nfp32: 4 bytes each", ha="center",
            va="center", fontsize=10)
    _box(ax, 17.6, y0, d, n, SMALL, "V\nN×D", fontsize=9)
    _arrow(ax, (18.6, y0 + n / 2), (20.9, y0 + n / 2))
    ax.text(19.75, y0 + n / 2 + 0.4, "P V", ha="center", va="bottom", fontsize=9)
    _box(ax, 21.0, y0, d, n, SMALL, "O\nN×D", fontsize=9)
    ax.text(22.3, y0 + n / 2, "one (batch, head):\nN×D in, N×D out,\nN×N in between", ha="left", va="center",
            fontsize=9)
    ax.text(12.5, -1.1, "At B = 4 batches, H = 16 heads, N = 4096, D = 64: Q, K, V and O are 32 MiB each in fp16;"
            " one N×N matrix of every head is 2 GiB in fp16, 4 GiB in fp32.", ha="center", fontsize=10)
    ax.text(12.5, -2.0, "Every N×N tensor is written to GPU memory (HBM) by one kernel and read back by the next.",
            ha="center", fontsize=10, color="#a0522d")
    ax.set_title("Naive attention: small inputs and output, N×N matrices in between", fontsize=12)
    fig.tight_layout()
    return fig


def draw_online_softmax() -> plt.Figure:
    """A row of 16 scores read in 4 tiles of 4; after each tile: running max m, running sum l, and the
    factor exp(m_old - m_new) that rescales what was summed before."""
    rng = np.random.default_rng(6)
    x = np.round(rng.normal(0, 1.2, 16), 1)
    x[9] = 3.1  # the max arrives in the third tile, so the rescaling shows
    tiles = [x[i:i + 4] for i in range(0, 16, 4)]
    fig, (ax, tab) = plt.subplots(2, 1, figsize=(11, 6.2), gridspec_kw={"height_ratios": [2.3, 1.4]})
    colors = ["#8fb4d9", "#bcd3ea"] * 2
    for t, tile in enumerate(tiles):
        for j, value in enumerate(tile):
            ax.bar(4 * t + j, value, color=colors[t], edgecolor="black", linewidth=0.6)
        ax.axvline(4 * t - 0.5, color="gray", linewidth=0.8, linestyle=":")
        ax.text(4 * t + 1.5, -3.85, f"tile {t + 1}", ha="center", fontsize=10)
    m, l = -math.inf, 0.0
    rows = []
    for t, tile in enumerate(tiles):
        m_new = max(m, float(tile.max()))
        alpha = math.exp(m - m_new) if m > -math.inf else 0.0
        l = l * alpha + float(np.exp(tile - m_new).sum())
        ax.hlines(m_new, 4 * t - 0.5, 4 * t + 3.5, color="#c0392b", linewidth=2.2)
        rows.append((t + 1, m, m_new, alpha, l))
        m = m_new
    ax.plot([], [], color="#c0392b", linewidth=2.2, label="running max m after each tile")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlim(-0.8, 15.8)
    ax.set_ylim(-4.2, 3.9)
    ax.set_xticks(range(16))
    ax.set_xlabel("key index j")
    ax.set_ylabel("score x_j")
    ax.legend(loc="upper left", fontsize=9)
    ax.set_title("One row of scores, read one tile at a time", fontsize=12)
    tab.axis("off")
    cells = [["after tile", "m before", "m after", "rescale α = exp(m before − m after)",
              "l = α·l + Σ exp(x_j − m)"]]
    for t, m_old, m_new, alpha, l_t in rows:
        cells.append([str(t), "−∞" if m_old == -math.inf else f"{m_old:.1f}", f"{m_new:.1f}",
                      "0 (nothing summed yet)" if m_old == -math.inf else
                      (f"{alpha:.3f}" + ("   (max unchanged)" if alpha == 1.0 else "   (new max: shrink the old sum)")),
                      f"{l_t:.3f}"])
    table = tab.table(cellText=cells, loc="center", cellLoc="center", colWidths=[0.1, 0.1, 0.1, 0.4, 0.3])
    table.auto_set_font_size(False)
    table.set_fontsize(10)
    table.scale(1, 1.5)
    for j in range(5):
        table[0, j].set_facecolor("#eeeeee")
    exact = float(np.exp(x - x.max()).sum())
    tab.text(0.5, -0.02, f"After the last tile l = {rows[-1][4]:.3f} = Σ over all 16 keys of exp(x_j − max x) "
             f"= {exact:.3f}: the same number a two-pass softmax computes.", ha="center", va="top", fontsize=10,
             transform=tab.transAxes)
    fig.tight_layout()
    return fig


def draw_tiling() -> plt.Figure:
    """The N x N score matrix in tiles of BLOCK_M x BLOCK_N, with BLOCK_M = 2 BLOCK_N as in the
    solution. Left: one program owns a row of tiles and walks along it. Right: causal, which tiles
    need a mask and which are skipped."""
    tm, tn = 6, 12  # query tiles (2 units tall), key tiles (1 unit wide): a square of 12 x 12 units
    fig, axes = plt.subplots(1, 2, figsize=(13, 7.4))
    for ax, causal in zip(axes, (False, True)):
        ax.set_xlim(-2.4, tn + 0.4)
        ax.set_ylim(2 * tm + 3.4, -1.4)
        ax.set_aspect("equal")
        ax.axis("off")
        for i in range(tm):
            for j in range(tn):
                # query tile i holds rows [2i, 2i + 2) in key-tile units; key tile j covers [j, j + 1)
                if not causal:
                    face = ONCHIP if i == 2 else "white"
                elif j + 1 <= 2 * i:  # every key is at or before every query of the tile: no mask
                    face = ONCHIP
                elif j >= 2 * i + 2:  # every key is after every query: skipped
                    face = SKIP
                else:
                    face = MASKED
                _box(ax, j, 2 * i, 1, 2, face, lw=0.6, edge="#555555")
            ax.text(-0.3, 2 * i + 1, f"Q tile {i}", ha="right", va="center", fontsize=8.5)
        ax.text(tn / 2, -0.6, "keys: one K tile and one V tile of BLOCK_N rows per column  →", ha="center",
                fontsize=9.5)
        if causal:
            ax.plot([0, tn], [0, 2 * tm], color="#c0392b", linewidth=2)
            ax.text(tn * 0.75, tm * 0.45, "key after query:\nmasked out", color="#c0392b", fontsize=10,
                    ha="center")
            handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="#555555") for c in (ONCHIP, MASKED, SKIP)]
            ax.legend(handles, ["computed, no mask", "crosses the diagonal: computed with a mask",
                                "after the diagonal: skipped (the loop ends before it)"],
                      loc="upper center", bbox_to_anchor=(0.5, 0.2), fontsize=9, frameon=False)
            ax.set_title("causal: each program's loop stops at the diagonal,\nabout half the tiles of the "
                         "non-causal case", fontsize=11)
        else:
            _arrow(ax, (0.1, 5), (tn - 0.1, 5), color="#1f5f8b", lw=2)
            ax.text(tn / 2, 2 * tm + 0.7, "One program (pid_m = 2, one batch and head) owns the green row of tiles.\n"
                    "Its Q tile stays in registers while the loop walks left to right,\n"
                    "loading one K tile and one V tile per step. The grid has\n"
                    "ceil(N / BLOCK_M) x (B·H) programs.", ha="center", va="top", fontsize=9.5, color="#1f5f8b")
            ax.set_title("the N×N scores are never stored:\none BLOCK_M×BLOCK_N tile at a time, in registers",
                         fontsize=11)
    fig.tight_layout()
    return fig


def draw_backward() -> plt.Figure:
    """Exercise 6b: the N x N matrix of P in square tiles, causal. Left: the dK/dV kernel, one program per
    key tile (a column), walking down the query tiles that can see it. Right: the dQ kernel, one program
    per query tile (a row), walking along the key tiles it can see. Both skip the tiles after the diagonal."""
    t = 8
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.6))
    for ax, kind in zip(axes, ("dkdv", "dq")):
        ax.set_xlim(-2.2, t + 0.4)
        ax.set_ylim(t + 2.6, -1.4)
        ax.set_aspect("equal")
        ax.axis("off")
        for i in range(t):
            for j in range(t):
                mine = (kind == "dkdv" and j == 3) or (kind == "dq" and i == 5)
                if j > i:
                    face = SKIP
                elif mine:
                    face = ONCHIP if j < i else MASKED
                else:
                    face = "white"
                _box(ax, j, i, 1, 1, face, lw=0.6, edge="#555555")
            ax.text(-0.3, i + 0.5, f"Q tile {i}", ha="right", va="center", fontsize=8.5)
        ax.plot([0, t], [0, t], color="#c0392b", linewidth=2)
        ax.text(t / 2, -0.6, "key tiles  →", ha="center", fontsize=9.5)
        if kind == "dkdv":
            _arrow(ax, (3.5, 3.1), (3.5, t - 0.1), color="#1f5f8b", lw=2)
            ax.set_title("attention_bwd_dkdv: one program per key tile\nwalks down the query tiles that see it",
                         fontsize=11)
            note = ("keeps dK, dV of its keys in registers;\nper step: S^T, P^T = exp(S^T - L), dV += P^T dO,\n"
                    "dP^T = V dO^T, dS^T, dK += dS^T Q")
        else:
            _arrow(ax, (0.1, 5.5), (5.9, 5.5), color="#1f5f8b", lw=2)
            ax.set_title("attention_bwd_dq: one program per query tile\nwalks along the key tiles it sees",
                         fontsize=11)
            note = "keeps dQ of its queries in registers;\nper step: S, P = exp(S - L), dP = dO V^T,\ndS, dQ += dS K"
        ax.text(t / 2, t + 0.4, note, ha="center", va="top", fontsize=9.5, color="#1f5f8b")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="#555555") for c in (ONCHIP, MASKED, SKIP)]
    fig.legend(handles, ["recomputed by the program: every score visible", "on the diagonal: recomputed, the causal mask needed",
                         "after the diagonal: skipped"], loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def main() -> None:
    for name, draw in (("ch06_naive.png", draw_naive), ("ch06_online_softmax.png", draw_online_softmax),
                       ("ch06_tiling.png", draw_tiling), ("ch06_backward.png", draw_backward)):
        fig = draw()
        fig.savefig(HERE / name, dpi=DPI)
        plt.close(fig)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
