"""Draw chapter 2's four figures.

    python assets/figures/make_ch02_figures.py

writes, beside this script:
- ch02_sectors.png: the 32-byte sectors one warp's loads touch at stride 1, 2 and 8
- ch02_transpose.png: the naive transpose reads a row of x (4 sectors) and writes a column of out
  (32 sectors)
- ch02_tile.png: a 32x32 tile staged in shared memory, so both global sides read and write rows
- ch02_banks.png: the banks of a [32][32] tile (a column is one bank) and of a [32][33] tile
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110

READ = "#3b75af"        # bytes read, and the warp that reads them
READ_LIGHT = "#cfe0f1"  # the rest of a sector that had to come along
WRITE = "#e1812c"
WRITE_LIGHT = "#f8dcc0"
GRID = "#b5b5b5"


def _box(ax, x, y, w, h, face, edge="black", lw=1.0, ls="-", hatch=None, z=1):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw,
                           linestyle=ls, hatch=hatch, zorder=z))


def _arrow(ax, start, end, color, lw=1.6, style="-|>", z=3, rad=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=14, color=color,
                                 linewidth=lw, zorder=z, shrinkA=0, shrinkB=0,
                                 connectionstyle=f"arc3,rad={rad}"))


# ------------------------------------------------------------------------------- sectors

def draw_sectors() -> plt.Figure:
    """Three strides; memory drawn as 1,024 bytes = 256 floats = 32 sectors of 8 floats."""
    floats, per_sector = 256, 8
    fig, ax = plt.subplots(figsize=(12, 5.4))
    ax.set_xlim(-30, floats + 2)
    ax.set_ylim(-1.2, 10.4)
    ax.axis("off")
    ax.set_title("One warp, 32 threads, each loading one float (4 bytes): what the memory system fetches",
                 fontsize=12, pad=4)
    for row, stride in enumerate((1, 2, 8)):
        y = 7.6 - row * 3.35
        used = {k * stride for k in range(32)}
        sectors = {f // per_sector for f in used}
        # Thread row: 32 ticks, one per thread, joined to the float it reads.
        for k in range(32):
            tx = 4 + k * 8
            f = k * stride
            ax.plot([tx, f + 0.5], [y + 1.55, y + 0.95], color=READ, linewidth=0.6, zorder=2)
            ax.plot(tx, y + 1.6, marker="v", markersize=3.2, color=READ, zorder=3)
        ax.text(-2, y + 1.65, "threads 0…31", ha="right", va="center", fontsize=9)
        # Memory: sectors, with the floats actually used drawn dark.
        for s in range(floats // per_sector):
            fetched = s in sectors
            _box(ax, s * per_sector, y, per_sector, 0.9, READ_LIGHT if fetched else "white", edge="black",
                 lw=0.8, z=1)
        for f in used:
            _box(ax, f, y, 1, 0.9, READ, edge="none", lw=0, z=2)
        for s in sorted(sectors):  # sector edges on top, so that they show through the used floats
            _box(ax, s * per_sector, y, per_sector, 0.9, "none", edge="black", lw=0.8, z=3)
        ax.text(-2, y + 0.45, f"stride {stride}", ha="right", va="center", fontsize=10, weight="bold")
        fetched_bytes = 32 * len(sectors)
        ax.text(floats, y - 0.35, f"{len(sectors)} sectors fetched = {fetched_bytes:,} bytes for 128 bytes used: "
                f"{100 * 128 / fetched_bytes:g}% of the traffic is useful", ha="right", va="top", fontsize=9.5)
    ax.text(0, -0.75, "Memory from the first thread's address on: each box is one 32-byte sector (8 floats).\n"
            "Dark: the floats the threads asked for. Light: the rest of each sector, fetched anyway. "
            "White: not fetched.", ha="left", va="center", fontsize=9, color="#444444")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------- transpose

def _matrix(ax, x0, y0, n, cell, title, sector_every=8):
    """An n x n matrix of cells, row 0 at the top; thicker lines every `sector_every` columns."""
    for r in range(n):
        for c in range(n):
            _box(ax, x0 + c * cell, y0 + (n - 1 - r) * cell, cell, cell, "white", edge=GRID, lw=0.3, z=1)
    for c in range(0, n + 1, sector_every):
        ax.plot([x0 + c * cell] * 2, [y0, y0 + n * cell], color="#666666", linewidth=0.9, zorder=2)
    _box(ax, x0, y0, n * cell, n * cell, "none", edge="black", lw=1.2, z=3)
    ax.text(x0 + n * cell / 2, y0 + n * cell + 0.35, title, ha="center", va="bottom", fontsize=11)


def _cell(ax, x0, y0, n, cell, r, c, face, z=2):
    _box(ax, x0 + c * cell, y0 + (n - 1 - r) * cell, cell, cell, face, edge="none", lw=0, z=z)


def draw_transpose() -> plt.Figure:
    n, cell = 32, 0.17
    fig, ax = plt.subplots(figsize=(12, 5.8))
    ax.set_xlim(-0.5, 16.7)
    ax.set_ylim(-1.7, 6.6)
    ax.axis("off")
    lx, rx, y0 = 0.3, 10.9, 0.2
    side = n * cell
    _matrix(ax, lx, y0, n, cell, "x, row-major (a 32 × 32 corner)")
    _matrix(ax, rx, y0, n, cell, "out = xᵀ, row-major (a 32 × 32 corner)")
    r = 5
    for c in range(n):  # the warp reads row r of x ...
        _cell(ax, lx, y0, n, cell, r, c, READ)
    for c in range(n):  # ... and writes column r of out: one element in each of 32 rows
        for s in range(r // 8 * 8, r // 8 * 8 + 8):
            _cell(ax, rx, y0, n, cell, c, s, WRITE_LIGHT, z=1.5)
        _cell(ax, rx, y0, n, cell, c, r, WRITE)
    ry = y0 + (n - 1 - r) * cell + cell / 2
    ax.text(lx - 0.08, ry, "row r", ha="right", va="center", fontsize=8, color=READ)
    ax.text(rx + r * cell + cell / 2, y0 - 0.08, "column r", ha="center", va="top", fontsize=8, color=WRITE)
    _arrow(ax, (lx + side + 0.15, ry), (rx - 0.15, y0 + side / 2), "#555555", lw=1.4, rad=-0.2)
    mid = (lx + side + rx) / 2
    ax.text(mid, 5.35, "one warp, threadIdx.x = 0…31\n(thread k has c = k)\n\nout[c * rows + r] = x[r * cols + c];",
            ha="center", va="center", fontsize=9.5, family="monospace")
    ax.text(mid, 2.1, "thick lines: 32-byte sector\nboundaries (8 floats)\n\nlight orange: the rest of each\n"
            "sector the write touches", ha="center", va="center", fontsize=9, color="#444444")
    ax.text(lx + side / 2, -0.45, "read: 32 neighbouring floats of row r\n= 128 bytes in 4 sectors, every byte used",
            ha="center", va="top", fontsize=10, color=READ)
    ax.text(rx + side / 2, -0.45, "write: 32 floats down column r, one per row of out,\n4·rows bytes apart: "
            "32 sectors, 4 useful bytes in each", ha="center", va="top", fontsize=10, color=WRITE)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------- tile

def draw_tile() -> plt.Figure:
    t = 1.6            # one 32 x 32 tile of a matrix, in figure units
    st = 2.4           # the shared-memory tile, drawn larger
    fig, ax = plt.subplots(figsize=(12, 5.8))
    ax.set_xlim(-0.1, 15.1)
    ax.set_ylim(-1.75, 6.2)
    ax.axis("off")
    ty = 9             # the warp followed through the picture: threadIdx.y = 9

    def grid(x0, y0, tiles_r, tiles_c, label):
        _box(ax, x0, y0, tiles_c * t, tiles_r * t, "white", edge="black", lw=1.2)
        for k in range(1, tiles_c):
            ax.plot([x0 + k * t] * 2, [y0, y0 + tiles_r * t], color=GRID, linewidth=0.8)
        for k in range(1, tiles_r):
            ax.plot([x0, x0 + tiles_c * t], [y0 + k * t] * 2, color=GRID, linewidth=0.8)
        ax.text(x0 + tiles_c * t / 2, y0 + tiles_r * t + 0.15, label, ha="center", va="bottom", fontsize=10.5)

    def row(x0, y0, side, k, color):      # row k of a square of `side`, row 0 at the top
        h = side / 32
        _box(ax, x0, y0 + side - (k + 1) * h, side, h, color, edge="none", z=3)

    def col(x0, y0, side, k, color):
        w = side / 32
        _box(ax, x0 + k * w, y0, w, side, color, edge="none", z=3)

    # x: 2 tile rows by 3 tile columns; block (blockIdx.x = 2, blockIdx.y = 1) owns tile row 1, column 2.
    bx, by = 2, 1
    xx, xy = 0.2, 1.4
    grid(xx, xy, 2, 3, "x  (rows × cols), in 32 × 32 tiles")
    tx0, ty0 = xx + bx * t, xy + (1 - by) * t
    _box(ax, tx0, ty0, t, t, READ_LIGHT, edge=READ, lw=1.6, z=2)
    row(tx0, ty0, t, ty, READ)
    ax.text(xx + 1.5 * t, xy - 0.15, f"block (blockIdx.x = {bx}, blockIdx.y = {by}) owns this tile;\n"
            f"warp threadIdx.y = {ty} reads row {ty} of it", ha="center", va="top", fontsize=9, color=READ)

    # the shared-memory tile
    sx, sy = 6.3, 1.8
    _box(ax, sx, sy, st, st, "#f3f3f3", edge="black", lw=1.4, z=1)
    row(sx, sy, st, ty, READ)
    col(sx, sy, st, ty, WRITE)
    ax.text(sx + st / 2, sy + st + 0.15, "__shared__ float tile[32][33]\n(on the chip, one per block)",
            ha="center", va="bottom", fontsize=10)
    ax.text(sx + st / 2, sy - 0.15, f"tile[threadIdx.y][threadIdx.x] = x[...];\n__syncthreads();\n"
            f"out[...] = tile[threadIdx.x][threadIdx.y];", ha="center", va="top", fontsize=8.5, family="monospace")

    # out: 3 tile rows by 2 tile columns; the same block writes tile row 2, column 1.
    ox, oy = 11.6, 0.6
    grid(ox, oy, 3, 2, "out = xᵀ  (cols × rows)")
    otx, oty = ox + by * t, oy + (2 - bx) * t
    _box(ax, otx, oty, t, t, WRITE_LIGHT, edge=WRITE, lw=1.6, z=2)
    row(otx, oty, t, ty, WRITE)
    ax.text(ox + t, oy - 0.15, f"the same block writes the mirrored tile\n(tile row {bx}, column {by}); warp {ty} writes "
            f"row {ty} of it", ha="center", va="top", fontsize=9, color=WRITE)

    _arrow(ax, (tx0 + t + 0.1, ty0 + t / 2), (sx - 0.1, sy + st / 2), READ, lw=2)
    ax.text((tx0 + t + sx) / 2 + 0.05, ty0 + t + 0.05, "1. coalesced\nglobal reads", ha="center", va="bottom",
            fontsize=9.5, color=READ)
    _arrow(ax, (sx + st + 0.1, sy + st / 2), (otx - 0.1, oty + t / 2), WRITE, lw=2)
    ax.text((sx + st + otx) / 2, sy + st / 2 + 0.35, "2. coalesced\nglobal writes", ha="center", va="bottom",
            fontsize=9.5, color=WRITE)
    ax.text(7.5, -1.3, "The transpose happens inside shared memory: a warp stores a row of the tile (blue) and, after "
            "the barrier, loads a column of it (orange).\nGlobal memory only ever sees rows: 32 neighbouring floats "
            "per warp, on both sides.", ha="center", va="center", fontsize=9.5, color="#333333")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------- banks

def draw_banks() -> plt.Figure:
    cmap = plt.get_cmap("hsv")
    cell = 0.16
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.6))
    for ax, width in zip(axes, (32, 33)):
        ax.set_xlim(-1.6, 34 * cell + 0.3)
        ax.set_ylim(-1.8, 32 * cell + 1.2)
        ax.set_aspect("equal")
        ax.axis("off")
        col = 0
        for r in range(32):
            for c in range(width):
                bank = (r * width + c) % 32
                x, y = c * cell, (31 - r) * cell
                if c >= 32:  # the padding word: allocated, never used
                    _box(ax, x, y, cell, cell, "white", edge=GRID, lw=0.3, hatch="////")
                else:
                    _box(ax, x, y, cell, cell, cmap(bank / 36), edge="white", lw=0.3)  # /36: bank 31 not red again
        for r in range(32):  # the column one warp reads: thread k reads row k
            _box(ax, col * cell, (31 - r) * cell, cell, cell, "none", edge="black", lw=1.4, z=3)
        for c in range(0, 32, 8):
            ax.text(c * cell + cell / 2, 32 * cell + 0.12, str(c), ha="center", va="bottom", fontsize=7)
        ax.text(-0.15, 32 * cell + 0.12, "column", ha="right", va="bottom", fontsize=7)
        ax.text(-0.15, 31 * cell + cell / 2, "row 0", ha="right", va="center", fontsize=7)
        ax.text(-0.15, cell / 2, "row 31", ha="right", va="center", fontsize=7)
        banks = sorted({(r * width + col) % 32 for r in range(32)})
        ways = 32 // len(banks)
        title = (f"float tile[32][{width}]: word [r][c] is in bank (r·{width} + c) % 32"
                 if width == 32 else f"float tile[32][{width}]: one padding word per row")
        ax.set_title(title, fontsize=10.5)
        if ways == 1:
            what = ("column 0 (outlined) is spread over all 32 banks:\nthe warp's 32 loads are served at once, "
                    "no conflict")
        else:
            what = (f"column 0 (outlined) lies entirely in bank 0:\n{ways}-way conflict, the warp's loads are "
                    f"served one after another")
        ax.text(34 * cell / 2, -0.25, what, ha="center", va="top", fontsize=10)
    fig.suptitle("Shared memory: 32 banks, each 4 bytes wide (colour = bank). A warp reads one column: "
                 "thread k reads tile[k][0].", fontsize=11.5)
    fig.tight_layout()
    return fig


def main() -> None:
    for name, draw in (("ch02_sectors.png", draw_sectors), ("ch02_transpose.png", draw_transpose),
                       ("ch02_tile.png", draw_tile), ("ch02_banks.png", draw_banks)):
        fig = draw()
        path = HERE / name
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
