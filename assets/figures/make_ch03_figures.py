"""Draw chapter 3's four figures.

    python assets/figures/make_ch03_figures.py

writes, beside this script:
- ch03_naive.png: what one warp of the naive kernel reads at one step k, with threadIdx.x along a
  row of C (coalesced) and down a column of C (uncoalesced)
- ch03_tiling.png: a block's 32 x 32 tile of C, the strips of A and B it needs, and one step of the
  loop that stages a tile of each in shared memory
- ch03_register_blocking.png: a 128 x 128 block tile with 8 x 8 outputs per thread, one step k as an
  outer product, and the loads per multiply-add of the three kernels
- ch03_warp_tiling.png: the warp-tiling stretch goal: a 128 x 128 block tile split into eight 64 x 32
  warp tiles, one warp tile split into 2 x 2 sub-tiles of 4 x 4 patches per thread, and how many
  floats a warp reads from shared memory per multiply-add in each rung
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110

A_COLOR = "#3b75af"     # A, and what is read from it
B_COLOR = "#e1812c"     # B, and what is read from it
C_COLOR = "#55a868"     # C, and what is written
LIGHT = {"A": "#dbe7f3", "B": "#fbe6d3", "C": "#dcefe0"}
SMEM = "#f3e9f7"
SMEM_EDGE = "#8a5aa8"


def _box(ax, x, y, w, h, face, edge="black", lw=1.0, ls="-", z=1, alpha=1.0, hatch=None):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw, linestyle=ls,
                           zorder=z, alpha=alpha, hatch=hatch))


def _arrow(ax, start, end, color, lw=1.5, z=4, style="-|>", rad=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color, linewidth=lw,
                                 zorder=z, shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad}"))


def _grid(ax, x, y, cols, rows, cell, face, edge="#9a9a9a", lw=0.4):
    """A matrix drawn as cells; (x, y) is its top-left corner, rows go down."""
    _box(ax, x, y - rows * cell, cols * cell, rows * cell, face, edge="black", lw=1.2, z=1)
    for c in range(1, cols):
        ax.plot([x + c * cell] * 2, [y, y - rows * cell], color=edge, linewidth=lw, zorder=2)
    for r in range(1, rows):
        ax.plot([x, x + cols * cell], [y - r * cell] * 2, color=edge, linewidth=lw, zorder=2)


def _cell(ax, x, y, col, row, cell, face, z=3, edge=None):
    _box(ax, x + col * cell, y - (row + 1) * cell, cell, cell, face, edge=edge or face, lw=0.6, z=z)


def _table(fig, rect, rows, xs, top, step, fontsize, rule):
    """A table in its own axes at `rect`: the first row and column bold, a rule under the header."""
    tx = fig.add_axes(rect)
    tx.set_xlim(0, 1)
    tx.set_ylim(0, 1)
    tx.axis("off")
    for i, row in enumerate(rows):
        y = top - step * i
        for j, text in enumerate(row):
            tx.text(xs[j], y, text, ha="left", va="center", fontsize=fontsize,
                    weight="bold" if i == 0 or j == 0 else "normal")
        if i == 0:
            tx.plot([0, 1], [y - rule, y - rule], color="black", linewidth=0.8)
    return tx


def draw_naive() -> plt.Figure:
    """Two panels: a warp along a row of C (coalesced) and down a column of C (uncoalesced)."""
    n, cell, warp = 12, 0.36, 8  # 12 x 12 matrices; a "warp" drawn with 8 threads
    fig, axes = plt.subplots(1, 2, figsize=(13, 6.6))
    k_step = 5
    panels = (
        ("threadIdx.x along a row of C: coalesced", "row"),
        ("threadIdx.x down a column of C: uncoalesced", "col"),
    )
    for ax, (title, mode) in zip(axes, panels):
        ax.set_xlim(-0.6, 2 * n * cell + 1.6)
        ax.set_ylim(-n * cell - 2.75, n * cell + 1.35)
        ax.axis("off")
        ax.set_title(title, fontsize=12, pad=6)
        # Classic layout: B above C, A to the left of C.
        ax_x, top = 0.0, 0.0
        bx, by = n * cell + 0.5, n * cell + 0.5
        cx, cy = n * cell + 0.5, top
        _grid(ax, ax_x, top, n, n, cell, LIGHT["A"])
        _grid(ax, bx, by, n, n, cell, LIGHT["B"])
        _grid(ax, cx, cy, n, n, cell, LIGHT["C"])
        ax.text(ax_x + n * cell / 2, top + 0.15, "A (M x K)", ha="center", va="bottom", fontsize=10, color=A_COLOR)
        ax.text(bx - 0.12, by - n * cell / 2, "B\n(K x N)", ha="right", va="center", fontsize=10, color=B_COLOR)
        ax.text(cx + n * cell / 2, cy - n * cell - 0.1, "C (M x N)", ha="center", va="top", fontsize=10,
                color=C_COLOR)
        # The warp's outputs in C.
        r0, c0 = 3, 2
        outputs = [(r0, c0 + t) for t in range(warp)] if mode == "row" else [(r0 + t - 2, c0 + 4) for t in range(warp)]
        for r, c in outputs:
            _cell(ax, cx, cy, c, r, cell, C_COLOR)
        # What the warp reads at step k.
        if mode == "row":
            a_cells = [(r0, k_step)]
            b_cells = [(k_step, c0 + t) for t in range(warp)]
        else:
            a_cells = [(r, k_step) for r, _ in outputs]
            b_cells = [(k_step, c0 + 4)]
        for r, c in a_cells:
            _cell(ax, ax_x, top, c, r, cell, A_COLOR)
        for r, c in b_cells:
            _cell(ax, bx, by, c, r, cell, B_COLOR)
        # Column k of A and row k of B, outlined.
        _box(ax, ax_x + k_step * cell, top - n * cell, cell, n * cell, "none", edge=A_COLOR, lw=1.2, ls="--", z=4)
        _box(ax, bx, by - (k_step + 1) * cell, n * cell, cell, "none", edge=B_COLOR, lw=1.2, ls="--", z=4)
        ax.text(ax_x + (k_step + 0.5) * cell, top - n * cell - 0.08, "column k", ha="center", va="top",
                fontsize=8, color=A_COLOR)
        ax.text(bx + n * cell + 0.08, by - (k_step + 0.5) * cell, "row k", ha="left", va="center", fontsize=8,
                color=B_COLOR)
        # Captions: what one load instruction of the warp touches.
        if mode == "row":
            lines = [("32 threads, 32 neighbouring outputs of one row of C.", "black"),
                     ("At each k, the warp's load of B reads 32 neighbouring floats of row k:", B_COLOR),
                     ("    128 bytes in 4 sectors, every byte used.", B_COLOR),
                     ("Its load of A reads one float, the same for all 32 threads:", A_COLOR),
                     ("    one sector, broadcast to the warp.", A_COLOR)]
        else:
            lines = [("32 threads, 32 outputs down one column of C.", "black"),
                     ("At each k, the warp's load of A reads 32 floats of column k, one per row:", A_COLOR),
                     ("    K floats (4K bytes) apart, so 32 sectors for 128 useful bytes.", A_COLOR),
                     ("Its load of B reads one float, the same for all 32 threads.", B_COLOR),
                     ("The store of C, too, writes 32 floats N apart: 32 sectors.", C_COLOR)]
        for i, (text, color) in enumerate(lines):
            ax.text(-0.5, -n * cell - 0.55 - 0.37 * i, text, ha="left", va="top", fontsize=9.5, color=color)
    fig.text(0.5, 0.015, "Drawn with 12 x 12 matrices and 8 threads standing for a warp's 32. "
             "Each thread computes C[row][col] = sum over k of A[row][k] * B[k][col].",
             ha="center", fontsize=9, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def draw_tiling() -> plt.Figure:
    """A block's tile of C, its strips of A and B, and one step of the shared-memory loop."""
    n, cell, t = 16, 0.3, 4  # 16 x 16 matrices drawn with 4 x 4 tiles (really 32 x 32)
    fig, ax = plt.subplots(figsize=(13, 8.4))
    ax.set_xlim(-0.5, 16.0)
    ax.set_ylim(-n * cell - 1.75, n * cell + 1.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Shared-memory tiling: one block computes one T x T tile of C (drawn with T = 4; the kernel "
                 "uses T = 32)", fontsize=12, pad=4)
    ax_x, top = 0.0, 0.0
    bx, by = n * cell + 0.5, n * cell + 0.5
    cx, cy = bx, top
    _grid(ax, ax_x, top, n, n, cell, LIGHT["A"], lw=0.25)
    _grid(ax, bx, by, n, n, cell, LIGHT["B"], lw=0.25)
    _grid(ax, cx, cy, n, n, cell, LIGHT["C"], lw=0.25)
    ax.text(ax_x + n * cell / 2, top - n * cell - 0.1, "A (M x K)", ha="center", va="top", fontsize=10,
            color=A_COLOR)
    ax.text(bx + n * cell / 2, by + 0.08, "B (K x N)", ha="center", va="bottom", fontsize=10, color=B_COLOR)
    ax.text(cx + n * cell / 2, cy - n * cell - 0.1, "C (M x N)", ha="center", va="top", fontsize=10, color=C_COLOR)

    br, bc, step = 1, 1, 2  # the block's tile row and column, and the step k0 = step * T
    # The block's tile of C and the strips it needs.
    _box(ax, cx + bc * t * cell, cy - (br + 1) * t * cell, t * cell, t * cell, C_COLOR, edge="black", lw=1.2, z=3)
    ax.text(cx + (bc + 0.5) * t * cell, cy - (br + 1) * t * cell - 0.08, "the block's\ntile of C", ha="center",
            va="top", fontsize=8.5, color=C_COLOR)
    _box(ax, ax_x, top - (br + 1) * t * cell, n * cell, t * cell, "none", edge=A_COLOR, lw=1.6, z=4)
    _box(ax, bx + bc * t * cell, by - n * cell, t * cell, n * cell, "none", edge=B_COLOR, lw=1.6, z=4)
    for s in range(n // t):
        face_a = A_COLOR if s == step else "#a9c6e3"
        face_b = B_COLOR if s == step else "#f3c49b"
        alpha = 1.0 if s <= step else 0.45
        _box(ax, ax_x + s * t * cell, top - (br + 1) * t * cell, t * cell, t * cell, face_a, edge="white", lw=0.8,
             z=3, alpha=alpha)
        _box(ax, bx + bc * t * cell, by - (s + 1) * t * cell, t * cell, t * cell, face_b, edge="white", lw=0.8,
             z=3, alpha=alpha)
    ax.text(ax_x + (step + 0.5) * t * cell, top - (br + 1) * t * cell - 0.08, "A's tile at k0", ha="center",
            va="top", fontsize=8.5, color=A_COLOR)
    ax.text(bx + (bc + 1) * t * cell + 0.08, by - (step + 0.5) * t * cell, "B's tile at k0", ha="left",
            va="center", fontsize=8.5, color=B_COLOR)

    # Shared memory, in the empty corner above A.
    sc = 0.38
    px, py = 0.0, by - 0.3  # top-left of the panel
    _box(ax, px, py - 4.2, n * cell, 4.2, SMEM, edge=SMEM_EDGE, lw=1.2, z=1)
    ax.text(px + 0.12, py - 0.1, "shared memory (on the block's SM)", ha="left", va="top", fontsize=9.5,
            color=SMEM_EDGE)
    as_x, bs_x, sy = px + 0.55, px + 2.75, py - 1.05
    _grid(ax, as_x, sy, t, t, sc, A_COLOR, edge="white", lw=0.8)
    _grid(ax, bs_x, sy, t, t, sc, B_COLOR, edge="white", lw=0.8)
    ax.text(as_x + t * sc / 2, sy - t * sc - 0.08, "As[T][T]", ha="center", va="top", fontsize=9.5,
            family="monospace")
    ax.text(bs_x + t * sc / 2, sy - t * sc - 0.08, "Bs[T][T]", ha="center", va="top", fontsize=9.5,
            family="monospace")
    _arrow(ax, (ax_x + (step + 0.5) * t * cell, top - br * t * cell), (as_x + t * sc / 2, py - 4.2 + 0.05), A_COLOR,
           rad=0.25)
    _arrow(ax, (bx + bc * t * cell, by - (step + 0.5) * t * cell), (bs_x + t * sc + 0.05, sy - t * sc / 2),
           B_COLOR, rad=-0.2)

    steps = ["One step of the loop over K, k0 = 0, T, 2T, ...",
             "",
             "1. Each of the T x T threads loads one float of",
             "   each tile into shared memory. Coalesced:",
             "   threadIdx.x runs along a row of A's tile and",
             "   along a row of B's tile.",
             "2. __syncthreads(): the tiles are complete.",
             "3. Each thread does T multiply-adds out of",
             "   shared memory:",
             "       acc += As[ty][k] * Bs[k][tx]",
             "4. __syncthreads(): everyone is done with the",
             "   tiles before the next step overwrites them.",
             "",
             "After the last step each thread writes its",
             "acc to C[row][col], once."]
    for i, s in enumerate(steps):
        ax.text(bx + n * cell + 0.6, 4.6 - 0.34 * i, s, ha="left", va="top", fontsize=9,
                family="monospace" if s.startswith("       acc") else None,
                weight="bold" if i == 0 else "normal")
    ax.text(-0.4, -n * cell - 0.55,
            "The block loads its strip of A and its strip of B once, a tile at a time. Every float it loads is "
            "then used by T threads (a row of As\nby the T threads of one row of the block, a column of Bs by the T "
            "threads of one column), so the kernel loads T times fewer\nbytes from global memory than the naive "
            "one: 2 T² floats per step for T³ multiply-adds.",
            ha="left", va="top", fontsize=9.5)
    fig.tight_layout()
    return fig


def draw_register_blocking() -> plt.Figure:
    """The 128 x 128 block tile, one thread's 8 x 8 patch, one step k as an outer product, and a table."""
    fig = plt.figure(figsize=(13, 6.6))
    ax = fig.add_axes((0.0, 0.0, 0.62, 0.93))
    ax.set_xlim(-0.6, 10.4)
    ax.set_ylim(-4.9, 4.0)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle("Register blocking: 256 threads, a 128 x 128 tile of C per block, 8 x 8 outputs per thread",
                 fontsize=12, y=0.975)
    s = 0.3    # one 8 x 8 patch drawn as a 0.3 square: the 128 x 128 tile is 16 x 16 patches
    cx, cy = 2.2, 1.9  # top-left corner of the block tile of C
    tr, tc = 5, 9      # the thread drawn: trow, tcol
    # Bs: BK x BN, 8 rows of 128, drawn above C; As: transposed, BK x BM, drawn left of C as 8 columns.
    bk_h = 1.2
    _box(ax, cx, cy + 0.25, 16 * s, bk_h, LIGHT["B"], edge="black", lw=1.1)
    _box(ax, cx - 0.25 - bk_h, cy - 16 * s, bk_h, 16 * s, LIGHT["A"], edge="black", lw=1.1)
    for i in range(1, 8):
        ax.plot([cx, cx + 16 * s], [cy + 0.25 + i * bk_h / 8] * 2, color="#b0b0b0", linewidth=0.4)
        ax.plot([cx - 0.25 - bk_h + i * bk_h / 8] * 2, [cy, cy - 16 * s], color="#b0b0b0", linewidth=0.4)
    ax.text(cx + 8 * s, cy + 0.25 + bk_h + 0.1, "Bs: B's tile, BK x BN = 8 x 128", ha="center", va="bottom",
            fontsize=9.5, color=B_COLOR)
    ax.text(cx - 0.3 - bk_h, cy - 8 * s, "As: A's tile,\nBM x BK =\n128 x 8,\nstored\ntransposed:\nAs[k][m]",
            ha="right", va="center", fontsize=9, color=A_COLOR)
    _grid(ax, cx, cy, 16, 16, s, LIGHT["C"], lw=0.3)
    ax.text(cx + 8 * s, cy - 16 * s - 0.1, "the block's tile of C, 128 x 128: 16 x 16 patches of 8 x 8,\n"
            "one patch per thread (trow = tid / 16, tcol = tid % 16)", ha="center", va="top", fontsize=9)
    _cell(ax, cx, cy, tc, tr, s, C_COLOR, z=4, edge="black")
    # Step k: row k of Bs, the thread's 8 columns; column k of As, the thread's 8 rows.
    k = 3
    yk = cy + 0.25 + (7 - k) * bk_h / 8
    _box(ax, cx + tc * s, yk, s, bk_h / 8, B_COLOR, edge="black", lw=0.8, z=4)
    xk = cx - 0.25 - bk_h + k * bk_h / 8
    _box(ax, xk, cy - (tr + 1) * s, bk_h / 8, s, A_COLOR, edge="black", lw=0.8, z=4)
    ax.plot([cx, cx + 16 * s], [yk + bk_h / 16] * 2, color=B_COLOR, linewidth=0.6, linestyle="--", zorder=3)
    ax.plot([xk + bk_h / 16] * 2, [cy, cy - 16 * s], color=A_COLOR, linewidth=0.6, linestyle="--", zorder=3)
    ax.text(cx + 16 * s + 0.08, yk + bk_h / 16, "row k", ha="left", va="center", fontsize=8, color=B_COLOR)
    ax.text(xk + bk_h / 16, cy + 0.08, "k", ha="center", va="bottom", fontsize=8, color=A_COLOR)

    # The outer product, magnified, right of C.
    ox, oy, oc = 7.75, 1.0, 0.2
    for j in range(8):
        _box(ax, ox + j * oc, oy + 0.12, oc, oc, B_COLOR, edge="white", lw=0.6, z=3)
    for i in range(8):
        _box(ax, ox - 0.12 - oc, oy - (i + 1) * oc, oc, oc, A_COLOR, edge="white", lw=0.6, z=3)
    _grid(ax, ox, oy, 8, 8, oc, C_COLOR, edge="white", lw=0.6)
    ax.text(ox + 4 * oc, oy + 0.12 + oc + 0.06, "this thread, step k", ha="center", va="bottom", fontsize=8.5)
    ax.text(ox - 0.5, oy - 8 * oc - 0.12,
            "a_frag[i] = As[k][8 trow + i]\nb_frag[j] = Bs[k][8 tcol + j]\n\nacc[i][j] += a_frag[i] * b_frag[j]\n\n"
            "64 FMAs from 16 loads,\nin registers",
            ha="left", va="top", fontsize=8, family="monospace")
    _arrow(ax, (cx + (tc + 1) * s + 0.05, cy - (tr + 0.5) * s), (ox - 0.45, oy - 5 * oc), "#444444", lw=1.1,
           rad=-0.2)

    ax.text(-0.5, -3.75, "Per step k (8 steps per pair of tiles), each thread reads 8 floats of A and 8 of B from "
            "shared memory\ninto registers and does 8 x 8 = 64 multiply-adds with them: every value it loads feeds "
            "8 FMAs.\nBetween tiles, the 256 threads load the next 2 x 1024 floats together, 4 each.",
            ha="left", va="top", fontsize=9.5)

    # The table: loads per multiply-add for the three kernels.
    rows = [("", "global\nloads/FMA", "shared\nloads/FMA", "FLOP per byte\nfrom global"),
            ("naive", "2", "0", "0.25"),
            ("32 x 32 tile", "1/16", "2", "8"),
            ("128 x 128 block,\n8 x 8 per thread", "1/64", "1/4", "32")]
    tx = _table(fig, (0.62, 0.06, 0.37, 0.82), rows, (0.0, 0.36, 0.56, 0.76), 0.88, 0.15, 9.5, 0.065)
    tx.text(0.0, 0.12, "A multiply-add (FMA) is 2 FLOPs. The tile cuts global loads\n32-fold, but every FMA "
            "needs its own value of Bs from shared\nmemory, which serves one warp-wide load per clock while\n"
            "the SM can issue four warp-wide FMAs: the loads set the pace.\nRegister blocking needs eight times "
            "fewer of them.", ha="left", va="bottom", fontsize=9)
    return fig


def draw_warp_tiling() -> plt.Figure:
    """Block tile -> warp tiles -> one thread's four 4 x 4 patches, and the shared-memory reads per FMA."""
    fig = plt.figure(figsize=(13, 6.8))
    ax = fig.add_axes((0.0, 0.0, 0.66, 0.92))
    ax.set_xlim(-1.7, 11.2)
    ax.set_ylim(-5.6, 3.2)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle("Warp tiling: 8 warps, a 64 x 32 tile of C per warp, 2 x 2 sub-tiles of 4 x 4 outputs per thread",
                 fontsize=12, y=0.975)
    # Left: the block's 128 x 128 tile of C as 2 x 4 warp tiles (one unit = 32 rows or columns).
    u = 1.0
    cx, cy = 0.9, 1.9
    bk = 0.55  # the depth of As and Bs, drawn
    _box(ax, cx, cy + 0.15, 4 * u, bk, LIGHT["B"], lw=1.0)
    _box(ax, cx - 0.15 - bk, cy - 4 * u, bk, 4 * u, LIGHT["A"], lw=1.0)
    ax.text(cx + 2 * u, cy + 0.15 + bk + 0.08, "Bs[k][n], 8 x 128", ha="center", va="bottom", fontsize=9,
            color=B_COLOR)
    ax.text(cx - 0.2 - bk, cy + 0.35, "As[k][m],\n8 x 128", ha="right", va="bottom", fontsize=9, color=A_COLOR)
    for w in range(8):
        wr, wc = w // 4, w % 4
        face = C_COLOR if w == 5 else LIGHT["C"]
        _box(ax, cx + wc * u, cy - (wr + 1) * 2 * u, u, 2 * u, face, edge="black", lw=1.0, z=2)
        ax.text(cx + (wc + 0.5) * u, cy - (wr + 0.5) * 2 * u, f"warp\n{w}", ha="center", va="center", fontsize=9,
                color="white" if w == 5 else "black", zorder=3)
    # Warp 5 reads rows 64..127 of As and columns 32..63 of Bs, and nothing else.
    _box(ax, cx + u, cy + 0.15, u, bk, B_COLOR, lw=0.8, z=3, alpha=0.85)
    _box(ax, cx - 0.15 - bk, cy - 4 * u, bk, 2 * u, A_COLOR, lw=0.8, z=3, alpha=0.85)
    ax.text(cx + 2 * u, cy - 4 * u - 0.12, "the block's 128 x 128 tile of C:\n2 x 4 warp tiles of 64 x 32\n"
            "(warp = threadIdx.x / 32)", ha="center", va="top", fontsize=9)

    # Middle: warp 5's tile, 64 x 32, magnified: 2 x 2 sub-tiles of 32 x 16, each 8 x 4 patches of 4 x 4.
    s = 0.27
    mx, my = 6.1, 2.35
    ty, tx = 2, 1  # the thread drawn: lane 9
    for mi in range(2):
        for ni in range(2):
            x0, y0 = mx + ni * (4 * s + 0.12), my - mi * (8 * s + 0.12)
            _grid(ax, x0, y0, 4, 8, s, LIGHT["C"], lw=0.3)
            _cell(ax, x0, y0, tx, ty, s, C_COLOR, z=4, edge="black")
    ax.text(mx + 4 * s + 0.06, my - 16 * s - 0.3, "warp 5's 64 x 32 tile: 2 x 2 sub-tiles of 32 x 16,\n"
            "each 8 x 4 patches of 4 x 4; lane 9 (ty = 2, tx = 1)\nowns one patch in each: 8 x 8 outputs",
            ha="center", va="top", fontsize=9)
    _arrow(ax, (cx + 2 * u + 0.05, cy - 3.3 * u), (mx - 0.35, my - 13 * s), "#444444", lw=1.1, rad=0.2)
    # Above the sub-tiles, the float4s of Bs lane 9 reads; left of them, those of As.
    for ni in range(2):
        x0 = mx + ni * (4 * s + 0.12)
        _box(ax, x0, my + 0.1, 4 * s, 0.16, LIGHT["B"], lw=0.6)
        _box(ax, x0 + tx * s, my + 0.1, s, 0.16, B_COLOR, lw=0.6, z=3)
    for mi in range(2):
        y0 = my - mi * (8 * s + 0.12)
        _box(ax, mx - 0.28, y0 - 8 * s, 0.16, 8 * s, LIGHT["A"], lw=0.6)
        _box(ax, mx - 0.28, y0 - (ty + 1) * s, 0.16, s, A_COLOR, lw=0.6, z=3)
    ax.text(mx + 4 * s + 0.06, my + 0.35, "step k: 2 float4 of Bs", ha="center", va="bottom", fontsize=8.5,
            color=B_COLOR)
    ax.text(mx - 0.35, my - 3 * s, "2 float4\nof As", ha="right", va="center", fontsize=8.5, color=A_COLOR)
    ax.text(-1.6, -4.55, "At each k the whole warp reads 64 floats of As (8 float4s side by side, each shared by\n"
            "4 lanes) and 32 of Bs (4 float4s, each shared by 8 lanes): 96 floats for 2,048 FMAs.\n"
            "Each lane turns its 4 float4s into 64 FMAs in registers, as in register blocking.",
            ha="left", va="top", fontsize=9.5)

    # Right: the table.
    rows = [("one warp, one step k", "C it\ncovers", "smem\nfloats", "FMAs\nper float"),
            ("32 x 32 tile", "1 x 32", "33", "1"),
            ("register blocking\n(and sgemm_v2)", "16 x 128", "144", "14"),
            ("warp tile 64 x 32", "64 x 32", "96", "21"),
            ("warp tile 64 x 64,\n8 x 16 per thread", "64 x 64", "128", "32")]
    tx_ = _table(fig, (0.655, 0.08, 0.34, 0.8), rows, (0.0, 0.45, 0.66, 0.83), 0.9, 0.13, 9, 0.06)
    tx_.text(0.0, 0.14, "A warp's loads from shared memory are set by the\nshape of the piece of C it covers: a "
             "rows x cols piece\nreads rows + cols floats per k for rows x cols FMAs.\nA squarer warp tile reads "
             "fewer for the same work.", ha="left", va="bottom", fontsize=9)
    return fig


def main() -> None:
    for name, draw in (("ch03_naive.png", draw_naive), ("ch03_tiling.png", draw_tiling),
                       ("ch03_register_blocking.png", draw_register_blocking),
                       ("ch03_warp_tiling.png", draw_warp_tiling)):
        fig = draw()
        path = HERE / name
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
