"""Draw chapter 4's two figures.

    python assets/figures/make_ch04_figures.py

writes, beside this script:
- ch04_mma.png: what one warp-wide tensor-core MMA computes, against one FFMA instruction
- ch04_tiling.png: the block tile of the exercise, staged through shared memory, split among 8 warps
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110

HALF = "#9cc3e6"      # fp16 data
HALF_EDGE = "#3b75af"
FLOAT = "#f6c48f"     # fp32 data
FLOAT_EDGE = "#c9671a"
SMEM = "#c7e3c0"
SMEM_EDGE = "#3d8b3d"
GREY = "#e6e6e6"


def _box(ax, x, y, w, h, face, edge="black", lw=1.0, ls="-", z=1, alpha=1.0):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw, linestyle=ls,
                           zorder=z, alpha=alpha))


def _grid(ax, x, y, size, cells, face, edge):
    """A size x size square divided into cells x cells, drawn with its lower left corner at (x, y)."""
    _box(ax, x, y, size, size, face, edge, lw=1.4, z=2)
    step = size / cells
    for i in range(1, cells):
        ax.plot([x + i * step, x + i * step], [y, y + size], color=edge, linewidth=0.3, zorder=3)
        ax.plot([x, x + size], [y + i * step, y + i * step], color=edge, linewidth=0.3, zorder=3)


def _arrow(ax, start, end, color="black", lw=1.5, z=4, style="-|>", bend=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=13, color=color, linewidth=lw,
                                 zorder=z, shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={bend}"))


def draw_mma() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(11.4, 5.4))
    ax.set_xlim(0, 23.3)
    ax.set_ylim(-3.2, 7.2)
    ax.axis("off")
    ax.set_title("One tensor-core operation: a warp multiplies two 16 x 16 fp16 tiles and adds an fp32 tile",
                 fontsize=12, pad=6)

    size, y = 4.2, 1.6
    items = [(0.6, "A", "16 x 16 fp16", HALF, HALF_EDGE), (6.2, "B", "16 x 16 fp16", HALF, HALF_EDGE),
             (11.8, "C", "16 x 16 fp32", FLOAT, FLOAT_EDGE), (18.6, "D", "16 x 16 fp32", FLOAT, FLOAT_EDGE)]
    for x, name, what, face, edge in items:
        _grid(ax, x, y, size, 16, face, edge)
        ax.text(x + size / 2, y + size + 0.35, name, ha="center", va="bottom", fontsize=15, weight="bold")
        ax.text(x + size / 2, y - 0.3, what, ha="center", va="top", fontsize=10)
    for x, sym in ((5.4, "x"), (11.0, "+"), (17.0, "=")):
        ax.text(x, y + size / 2, sym, ha="center", va="center", fontsize=22)

    # One output element and the row and column it needs.
    step = size / 16
    r, c = 5, 11
    _box(ax, 0.6, y + size - (r + 1) * step, size, step, "none", "#d62728", lw=1.6, z=5)
    _box(ax, 6.2 + c * step, y, step, size, "none", "#d62728", lw=1.6, z=5)
    _box(ax, 18.6 + c * step, y + size - (r + 1) * step, step, step, "#d62728", "#d62728", lw=1.0, z=5)
    ax.text(20.7, y - 1.0, "each element of D: 16 products of a row\nof A and a column of B, plus C",
            ha="center", va="top", fontsize=9, color="#d62728")

    ax.text(0.6, -1.0, "wmma::mma_sync(d, a, b, c)", fontsize=11, family="monospace", va="center")
    notes = ["16 x 16 x 16 = 4,096 multiply-adds by the whole warp in one call. The tiles live in registers,",
             "spread over the 32 lanes (a 'fragment'). On sm_80 and sm_90 the call is 2 x HMMA.16816.F32, a",
             "16 x 8 x 16 step each: 2,048 multiply-adds per warp instruction. One FFMA does 32, one per lane."]
    for i, line in enumerate(notes):
        ax.text(0.6, -1.7 - 0.55 * i, line, fontsize=10, va="center")
    fig.tight_layout()
    return fig


def draw_tiling() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(13, 6.8))
    ax.set_xlim(-0.2, 25.0)
    ax.set_ylim(-2.4, 11.6)
    ax.axis("off")
    ax.set_title("Exercise 4: a block computes a 128 x 128 tile of C, staging 32 columns of A and 32 rows of B "
                 "at a time", fontsize=12, pad=6)

    # --- global memory: A (M x K) left of C (M x N), B (K x N) above C; C cut into 4 x 4 block tiles.
    unit, n = 1.2, 4                 # drawing units per 128 elements; tiles per side
    big = unit * n
    ax0, ay0 = 0.3, 0.0
    cx0, cy0 = ax0 + big + 0.5, ay0
    bx0, by0 = cx0, cy0 + big + 0.5
    _box(ax, ax0, ay0, big, big, GREY, "black", lw=1.2)
    _box(ax, bx0, by0, big, big, GREY, "black", lw=1.2)
    _box(ax, cx0, cy0, big, big, "white", "black", lw=1.2)
    ax.text(ax0 + big / 2, ay0 - 0.3, "A (M x K, fp16)", ha="center", va="top", fontsize=10)
    ax.text(bx0 + big + 0.15, by0 + big / 2, "B\n(K x N,\nfp16)", ha="left", va="center", fontsize=10)
    ax.text(cx0 + big / 2, cy0 - 0.3, "C (M x N, fp32)", ha="center", va="top", fontsize=10)
    for i in range(1, n):
        ax.plot([cx0 + i * unit] * 2, [cy0, cy0 + big], color="#999999", lw=0.6)
        ax.plot([cx0, cx0 + big], [cy0 + i * unit] * 2, color="#999999", lw=0.6)
    bi, bj = 1, 2   # the block tile drawn: block row 1, block column 2, counted from the top left
    tile_x, tile_y = cx0 + bj * unit, cy0 + big - (bi + 1) * unit
    _box(ax, tile_x, tile_y, unit, unit, FLOAT, FLOAT_EDGE, lw=2, z=3)
    ax.text(tile_x + unit / 2, tile_y + unit / 2, "block\ntile", ha="center", va="center", fontsize=8, zorder=4)
    # The row strip of A and column strip of B this block reads, and the 32-deep slice now staged.
    _box(ax, ax0, tile_y, big, unit, HALF, HALF_EDGE, lw=1, z=2, alpha=0.5)
    _box(ax, tile_x, by0, unit, big, HALF, HALF_EDGE, lw=1, z=2, alpha=0.5)
    k_step, ks = unit / 4, 5         # 32 of every 128; the slice drawn is the sixth
    _box(ax, ax0 + ks * k_step, tile_y, k_step, unit, HALF_EDGE, HALF_EDGE, lw=1, z=3)
    _box(ax, tile_x, by0 + big - (ks + 1) * k_step, unit, k_step, HALF_EDGE, HALF_EDGE, lw=1, z=3)
    ax.text(ax0 + (ks + 0.5) * k_step, tile_y + unit + 0.08, "k0 : k0+32", ha="center", va="bottom", fontsize=8)
    ax.text(ax0, by0 + big - 0.2, "global memory\n(HBM, through L2)", fontsize=11, weight="bold", va="top")
    ax.text(ax0, by0 + big - 1.5, "The block walks along K:\nslice after slice of its\nstrip of A and strip of B.",
            fontsize=9, va="top")

    # --- shared memory: As (128 x 32) left of the block tile, Bs (32 x 128) above it, as in C = A B.
    t = 4.0                          # the 128 x 128 block tile, drawn
    tx0, ty0 = 14.6, 0.4
    as_x, as_w = tx0 - 1.6, t / 4
    bs_y, bs_h = ty0 + t + 0.6, t / 4
    _box(ax, as_x, ty0, as_w, t, HALF, HALF_EDGE, lw=1.2, z=2)
    _box(ax, as_x + as_w, ty0, as_w * 0.25, t, SMEM, SMEM_EDGE, lw=1.0, z=2)
    _box(ax, tx0, bs_y, t, bs_h, HALF, HALF_EDGE, lw=1.2, z=2)
    _box(ax, tx0 + t, bs_y, t * 0.0625, bs_h, SMEM, SMEM_EDGE, lw=1.0, z=2)
    # Warp 1's part of each: rows 0-63 of As, columns 32-63 of Bs.
    _box(ax, as_x, ty0 + t / 2, as_w, t / 2, HALF_EDGE, HALF_EDGE, lw=1.0, z=3, alpha=0.8)
    _box(ax, tx0 + t / 4, bs_y, t / 4, bs_h, HALF_EDGE, HALF_EDGE, lw=1.0, z=3, alpha=0.8)
    ax.text(as_x + as_w / 2, ty0 - 0.15, "As\n128 x 32", ha="center", va="top", fontsize=9)
    ax.text(tx0 + t / 2, bs_y + bs_h + 0.1, "Bs: 32 x 128", ha="center", va="bottom", fontsize=9)
    ax.text(tx0 + t + 0.35, bs_y + bs_h / 2, "padding:\n8 halves\na row", ha="left", va="center", fontsize=8,
            color=SMEM_EDGE)
    ax.text(as_x - 0.3, bs_y + bs_h + 1.4, "shared memory, one block", fontsize=11, weight="bold", ha="left")
    _arrow(ax, (ax0 + (ks + 0.5) * k_step, tile_y - 0.05), (as_x - 0.08, ty0 + t * 0.3), color=HALF_EDGE,
           bend=0.38)
    _arrow(ax, (tile_x + unit + 0.05, by0 + big - (ks + 0.5) * k_step), (tx0 - 0.08, bs_y + bs_h / 2),
           color=HALF_EDGE)
    ax.text(as_x - 0.3, bs_y + bs_h + 1.0, "256 threads copy 16 bytes each at a time; zeros past the edges",
            ha="left", va="center", fontsize=9)

    # --- the block tile in registers: 2 x 4 warps of 64 x 32, each 4 x 2 fragments of 16 x 16.
    warp_w, warp_h = t / 4, t / 2
    for wm in range(2):
        for wn in range(4):
            face = "#f0a24e" if (wm, wn) == (0, 1) else FLOAT
            x, y = tx0 + wn * warp_w, ty0 + t - (wm + 1) * warp_h
            _box(ax, x, y, warp_w, warp_h, face, FLOAT_EDGE, lw=1.4, z=2)
            ax.text(x + warp_w / 2, y + warp_h / 2, f"warp\n{wm * 4 + wn}", ha="center", va="center", fontsize=8,
                    zorder=4)
    fx, fy = tx0 + warp_w, ty0 + t - warp_h
    for i in range(1, 4):
        ax.plot([fx, fx + warp_w], [fy + i * warp_h / 4] * 2, color=FLOAT_EDGE, lw=0.6, zorder=3)
    ax.plot([fx + warp_w / 2] * 2, [fy, fy + warp_h], color=FLOAT_EDGE, lw=0.6, zorder=3)
    ax.text(tx0 + t / 2, ty0 - 0.15, "C's block tile, in registers:\n8 warps of 64 x 32", ha="center", va="top",
            fontsize=9)
    ax.text(tx0 + t + 0.6, ty0 + t * 0.55,
            "For every 16-deep step, warp 1 loads\n4 fragments of A and 2 of B from\nshared memory "
            "(6 x 512 bytes) and\ndoes 4 x 2 = 8 MMAs with them:\n384 bytes per MMA.\n\n"
            "With one warp per 16 x 16 tile, each\nMMA needs its own 2 fragments:\n1,024 bytes per MMA, "
            "and from\nglobal memory.", ha="left", va="center", fontsize=9)
    fig.tight_layout()
    return fig


def main() -> None:
    for name, draw in (("ch04_mma.png", draw_mma), ("ch04_tiling.png", draw_tiling)):
        fig = draw()
        fig.savefig(HERE / name, dpi=DPI)
        plt.close(fig)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
