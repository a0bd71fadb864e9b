"""Draw chapter 5's three figures.

    python assets/figures/make_ch05_figures.py

writes, beside this script:
- ch05_tiles.png: one Triton program per output tile, walking along K in BLOCK_K chunks; the masks
  at the ragged edges
- ch05_grouping.png: the first wave of programs in row-major and in grouped order, and the strips
  of A and B each must bring into L2
- ch05_pipeline.png: what num_stages changes: loads of later K chunks in flight while tl.dot works
- ch05_hopper.png: the Hopper rung: a few persistent programs walking the tile grid in grouped
  order, and the path of a tile: global memory -> TMA -> shared memory -> wgmma -> TMA store
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]
from grader.chapters.ch05 import grouped_tile_reference  # noqa: E402  (the order the figure draws)
from make_ch01_figures import _arrow, _box  # noqa: E402  (the course's drawing helpers)

DPI = 110
A_COLOR, A_PALE = "#3b75af", "#b8cde4"
B_COLOR, B_PALE = "#2a9d8f", "#b3ded8"
C_COLOR = "#e1812c"
LIGHT = "#eef3f8"
MASK = "#c9c9c9"


def draw_tiles() -> plt.Figure:
    """A (M x K) at bottom left, B (K x N) at top right, C (M x N) at bottom right, in tile units."""
    gm, gn, gk = 5, 6, 5           # tiles of C down and across; K chunks
    bm = bn = bk = 1.0
    ragged_m, ragged_n = 0.55, 0.4  # the last tile row / column only partly inside the matrix
    M, N, K = (gm - 1 + ragged_m) * bm, (gn - 1 + ragged_n) * bn, gk * bk
    pm, pn = 2, 3                   # the program drawn

    fig, ax = plt.subplots(figsize=(11.5, 7.6))
    gap = 0.8
    ax.set_xlim(-1.2, K + gap + gn + 5.4)
    ax.set_ylim(-1.6, gm + gap + K + 1.0)
    ax.set_aspect("equal")
    ax.axis("off")

    cx0, cy0 = K + gap, 0.0                  # C's lower-left corner; row 0 of C is at the top
    ctop = cy0 + gm * bm
    ax0 = 0.0                                # A to the left of C, same rows
    bx0, by0 = cx0, ctop + gap               # B above C, same columns

    def c_cell(i, j):                        # lower-left corner of tile (i, j) of C
        return cx0 + j * bn, ctop - (i + 1) * bm

    # C: tiles, the ragged edge masked, the program's tile.
    for i in range(gm):
        for j in range(gn):
            x, y = c_cell(i, j)
            _box(ax, x, y, bn, bm, LIGHT, edge="#9aa9b8", lw=0.6)
    _box(ax, cx0, ctop - M, N, M, "none", edge="black", lw=1.4, z=3)
    # the parts of the last tile row and column that lie outside C: masked lanes
    _box(ax, cx0, ctop - gm * bm, gn * bn, gm * bm - M, MASK, edge="none", hatch="////", z=2)
    _box(ax, cx0 + N, ctop - gm * bm, gn * bn - N, gm * bm, MASK, edge="none", hatch="////", z=2)
    x, y = c_cell(pm, pn)
    _box(ax, x, y, bn, bm, C_COLOR, edge="black", lw=1.6, z=4)
    ax.text(x + bn / 2, y + bm / 2, f"({pm}, {pn})", ha="center", va="center", fontsize=9, zorder=5)
    note_x, note_y = cx0 + gn * bn + 0.35, ctop + 0.55
    _arrow(ax, (note_x - 0.05, note_y), (x + bn - 0.1, y + bm - 0.1), "black", lw=1.0, z=5)
    ax.text(note_x, note_y, "this program: pid_m = 2, pid_n = 3", ha="left", va="center", fontsize=8.5, zorder=5)
    ax.text(cx0 + N / 2, cy0 - 0.55 - (gm * bm - M), "C  (M x N): one program per BLOCK_M x BLOCK_N tile",
            ha="center", va="center", fontsize=10.5)

    # A: the program's row strip, in BLOCK_K chunks.
    _box(ax, ax0, ctop - M, K, M, "white", edge="black", lw=1.4)
    for k in range(gk):
        _box(ax, ax0 + k * bk, ctop - (pm + 1) * bm, bk, bm, A_PALE if k else A_COLOR, edge="white", lw=1.2, z=3)
    ax.text(ax0 + K / 2, ctop - M - 0.3, "A  (M x K)", ha="center", va="top", fontsize=10.5)
    ax.text(ax0 + bk / 2, ctop - (pm + 1) * bm - 0.12, "BLOCK_K", ha="center", va="top", fontsize=8)
    ax.text(ax0 - 0.15, ctop - (pm + 0.5) * bm, "BLOCK_M", ha="right", va="center", fontsize=8, rotation=90)
    _arrow(ax, (ax0 + 0.2, ctop - pm * bm + 0.25), (ax0 + K - 0.2, ctop - pm * bm + 0.25), A_COLOR, z=4)

    # B: the program's column strip, in BLOCK_K chunks.
    _box(ax, bx0, by0, N, K, "white", edge="black", lw=1.4)
    for k in range(gk):
        _box(ax, bx0 + pn * bn, by0 + K - (k + 1) * bk, bn, bk, B_PALE if k else B_COLOR, edge="white", lw=1.2,
             z=3)
    ax.text(bx0 + N / 2, by0 + K + 0.3, "B  (K x N)", ha="center", va="bottom", fontsize=10.5)
    ax.text(bx0 + pn * bn - 0.12, by0 + K - bk / 2, "BLOCK_K", ha="right", va="center", fontsize=8)
    _arrow(ax, (bx0 + (pn + 1) * bn + 0.25, by0 + K - 0.2), (bx0 + (pn + 1) * bn + 0.25, by0 + 0.2), B_COLOR, z=4)

    # The loop, in words, to the right of C.
    tx = cx0 + gn * bn + 0.35
    ax.text(tx, ctop - 0.1,
            "for each chunk k = 0, 1, ..., ceil(K / BLOCK_K) - 1:\n"
            "    a = tl.load(BLOCK_M x BLOCK_K of A)\n"
            "    b = tl.load(BLOCK_K x BLOCK_N of B)\n"
            "    acc = tl.dot(a, b, acc)   # fp32, in registers\n"
            "tl.store(C tile, acc.to(fp16))",
            ha="left", va="top", fontsize=8.6, family="monospace",
            bbox=dict(facecolor="white", edgecolor="#bbbbbb", pad=5))
    ax.text(tx, cy0 + 0.5,
            "grey hatched: lanes of the edge tiles\n"
            "that fall outside C (and outside A, B\n"
            "in the last K chunk). Their loads are\n"
            "masked (other=0.0 adds nothing to the\n"
            "dot product); their stores are skipped.",
            ha="left", va="center", fontsize=8.6, color="#333333")
    ax.text(ax0, by0 + K / 2,
            "solid: the chunk loaded in this step\npale: chunks still to come\n"
            "The same strips are read by every\nprogram in the same tile row (of A)\nor tile column (of B).",
            ha="left", va="center", fontsize=9, color="#333333")
    fig.tight_layout()
    return fig


def _order_panel(ax, title, group_m, grid_m, grid_n, wave):
    """A grid of tiles numbered by program id, the first wave shaded, and the strips it needs."""
    ax.set_xlim(-2.2, grid_n + 0.3)
    ax.set_ylim(-2.4, grid_m + 1.9)
    ax.set_aspect("equal")
    ax.axis("off")
    tile_of = {p: grouped_tile_reference(p, grid_m, grid_n, group_m) for p in range(grid_m * grid_n)}
    rows = {tile_of[p][0] for p in range(wave)}
    cols = {tile_of[p][1] for p in range(wave)}
    for p, (i, j) in tile_of.items():
        y = grid_m - 1 - i
        in_wave = p < wave
        _box(ax, j, y, 1, 1, C_COLOR if in_wave else "white", edge="#8a8a8a", lw=0.6)
        ax.text(j + 0.5, y + 0.5, str(p), ha="center", va="center", fontsize=7.5,
                color="black" if in_wave else "#999999")
    # A strips on the left (one per tile row), B strips on top (one per tile column).
    for i in range(grid_m):
        _box(ax, -1.6, grid_m - 1 - i + 0.08, 1.1, 0.84, A_COLOR if i in rows else "white", edge=A_COLOR, lw=0.8)
    for j in range(grid_n):
        _box(ax, j + 0.08, grid_m + 0.5, 0.84, 1.1, B_COLOR if j in cols else "white", edge=B_COLOR, lw=0.8)
    ax.text(-1.05, grid_m + 0.2, "A strips", ha="center", va="center", fontsize=9, color=A_COLOR, weight="bold")
    ax.text(-0.2, grid_m + 1.05, "B strips", ha="right", va="center", fontsize=9, color=B_COLOR, weight="bold")
    ax.text(grid_n / 2, grid_m + 1.85, title, ha="center", va="bottom", fontsize=11)
    ax.text(grid_n / 2, -0.45,
            f"programs 0-{wave - 1} (one wave) need {len(rows)} strips of A + {len(cols)} of B = "
            f"{len(rows) + len(cols)} strips\nfor {wave} tiles",
            ha="center", va="top", fontsize=9.5)


def draw_grouping() -> plt.Figure:
    grid_m, grid_n, wave = 8, 12, 24
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6))
    _order_panel(axes[0], "row-major order: pid_m = pid // grid_n, pid_n = pid % grid_n", 1, grid_m, grid_n, wave)
    _order_panel(axes[1], "grouped order, GROUP_M = 4: down a column of 4 tile rows, then the next",
                 4, grid_m, grid_n, wave)
    fig.suptitle("The same 24 tiles' worth of work, started in two orders: a strip is a BLOCK_M x K piece of A "
                 "or a K x BLOCK_N piece of B", fontsize=10.5, y=0.99)
    fig.tight_layout()
    return fig


def draw_pipeline() -> plt.Figure:
    """Timelines of one program's K loop: loads and tl.dot, with 1 and with 3 stages."""
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.6), sharex=True)
    load, dot = 2.0, 1.0       # time units: a chunk's load latency, one tl.dot
    chunks = 6

    def lane(ax, y, x, w, color, text):
        _box(ax, x, y, w, 0.7, color, edge="black", lw=0.6)
        ax.text(x + w / 2, y + 0.35, text, ha="center", va="center", fontsize=8)

    # num_stages = 1: each chunk is loaded, then multiplied, then the next load starts.
    ax = axes[0]
    t = 0.0
    for k in range(chunks):
        lane(ax, 1.0, t, load, "#d7e5f2", f"load {k}")
        lane(ax, 0.0, t + load, dot, C_COLOR, f"dot {k}")
        t += load + dot
    end1 = t
    ax.set_title(f"num_stages = 1: the tensor cores wait for every load ({chunks} chunks take {end1:.0f} units)",
                 fontsize=10, loc="left")

    # num_stages = 3: two chunks are loaded ahead; a new load starts as soon as a buffer is free.
    ax = axes[1]
    stages = 3
    load_start, load_end, dot_end = {}, {}, {}
    for k in range(chunks):
        # a load needs a free buffer: the dot that used this buffer `stages` chunks ago must be done
        free = dot_end.get(k - stages, 0.0)
        issue = max(free, load_start.get(k - 1, -1.0) + 0.25)
        load_start[k], load_end[k] = issue, issue + load
        start = max(load_end[k], dot_end.get(k - 1, 0.0))
        dot_end[k] = start + dot
    for k in range(chunks):
        row = 1.0 + 0.8 * (k % stages)
        lane(ax, row, load_start[k], load_end[k] - load_start[k], "#d7e5f2", f"load {k}")
        lane(ax, 0.0, dot_end[k] - dot, dot, C_COLOR, f"dot {k}")
    end3 = dot_end[chunks - 1]
    ax.set_title(f"num_stages = 3: loads of chunks k+1, k+2 in flight during dot k ({end3:.1f} units); "
                 f"shared memory holds 3 chunks of A and B", fontsize=10, loc="left")
    axes[0].text(-0.2, 1.35, "loads", ha="right", va="center", fontsize=8.5)
    axes[1].text(-0.2, 1.35 + 0.8, "loads into\n3 buffers", ha="right", va="center", fontsize=8.5)
    for a in axes:
        a.text(-0.2, 0.35, "tl.dot", ha="right", va="center", fontsize=8.5)
        a.set_xlim(-2.2, end1 + 0.3)
        a.set_ylim(-0.3, 3.7)
        a.set_yticks([])
        a.spines[["left", "top", "right"]].set_visible(False)
    axes[1].set_xlabel("time (a load is drawn 2x as long as a tl.dot; real ratios depend on the GPU and the tile)")
    fig.tight_layout()
    return fig


PROGRAM_COLORS = ("#e1812c", "#3b75af", "#2a9d8f", "#b5589b", "#7a6a3a")


def _persistent_panel(ax, grid_m: int, grid_n: int, group_m: int, programs: int) -> None:
    """Each tile coloured by the program that computes it, labelled with the step it does so at."""
    ax.set_xlim(-0.2, grid_n + 0.2)
    ax.set_ylim(-1.9, grid_m + 1.3)
    ax.set_aspect("equal")
    ax.axis("off")
    for tile in range(grid_m * grid_n):
        i, j = grouped_tile_reference(tile, grid_m, grid_n, group_m)
        prog, step = tile % programs, tile // programs
        _box(ax, j, grid_m - 1 - i, 1, 1, PROGRAM_COLORS[prog], edge="white", lw=1.2)
        ax.text(j + 0.5, grid_m - 0.5 - i, f"P{prog}\n#{step}", ha="center", va="center", fontsize=7.5,
                color="white", weight="bold")
    steps = -(-grid_m * grid_n // programs)
    ax.text(grid_n / 2, grid_m + 0.35, f"{programs} programs (one per SM) on {grid_m} x {grid_n} tiles, GROUP_M = {group_m}",
            ha="center", va="bottom", fontsize=10)
    ax.text(grid_n / 2, -0.3,
            f"program p computes tiles p, p + {programs}, p + {2 * programs}, ... of the grouped order:\n"
            f"#s = its s-th tile. {steps} steps; at each, the programs work on neighbouring tiles,\n"
            f"which share strips of A and B in L2; in the last, {grid_m * grid_n - (steps - 1) * programs} of the {programs} have a tile",
            ha="center", va="top", fontsize=8.5)


def _data_path_panel(ax) -> None:
    """Where a tile's bytes go on Hopper, and who moves them."""
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 10.7)
    ax.axis("off")
    stages = [("global memory (HBM, L2)\nA, B and C", 8.4, LIGHT),
              ("TMA unit: one thread issues a copy of a whole\nBLOCK_M x BLOCK_K tile; addresses, bounds\n"
               "and zero fill done in hardware", 6.3, "#d7e5f2"),
              ("shared memory: a ring of num_stages buffers\nof A and B tiles (plus one C tile)", 4.2, A_PALE),
              ("wgmma: 4 warps (a warpgroup) multiply from\nshared memory, asynchronously, into fp32\n"
               "accumulators in registers", 2.1, "#f6d2b0"),
              ("epilogue: fp16 tile to shared memory,\nthen a TMA store back to global memory", 0.0, B_PALE)]
    for text, y, color in stages:
        _box(ax, 0.6, y, 6.4, 1.55, color, edge="#555555", lw=0.8)
        ax.text(3.8, y + 0.78, text, ha="center", va="center", fontsize=8.5)
    for y0, y1 in ((8.4, 7.85), (6.3, 5.75), (4.2, 3.65), (2.1, 1.55)):
        _arrow(ax, (3.8, y0), (3.8, y1), "#333333")
    _arrow(ax, (7.0, 0.8), (8.6, 0.8), C_COLOR, style="-")
    _arrow(ax, (8.6, 0.8), (8.6, 9.2), C_COLOR, style="-")
    _arrow(ax, (8.6, 9.2), (7.0, 9.2), C_COLOR)
    ax.text(8.75, 5.0, "C written once\nper tile", ha="left", va="center", fontsize=8, rotation=90)
    ax.text(5.0, 10.65, "the path of one tile (registers never hold A or B)", ha="center", va="top", fontsize=10)


def draw_hopper() -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.8), gridspec_kw={"width_ratios": [1.25, 1]})
    _persistent_panel(axes[0], 6, 8, 2, 5)
    _data_path_panel(axes[1])
    fig.suptitle("The Hopper rung: few programs that loop over tiles, and tiles that travel by TMA and wgmma",
                 fontsize=11, y=0.99)
    fig.tight_layout()
    return fig


def main() -> None:
    for name, draw in (("ch05_tiles.png", draw_tiles), ("ch05_grouping.png", draw_grouping),
                       ("ch05_pipeline.png", draw_pipeline), ("ch05_hopper.png", draw_hopper)):
        fig = draw()
        path = HERE / name
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
