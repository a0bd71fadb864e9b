"""Draw chapter 1's two figures.

    python assets/figures/make_ch01_figures.py

writes, beside this script:
- ch01_grid.png: how a 1-D grid of blocks of threads covers an array of n elements
- ch01_fusion.png: bytes moved by torch eager's three kernels against one fused kernel
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110

READ = "#3b75af"      # arrays read, and arrows that read
WRITE = "#e1812c"     # arrays written, and arrows that write
IDLE = "#c9c9c9"
WARP_SHADES = ("#bcd3ea", "#8fb4d9")  # alternate warps, so their 32-thread edges show


def _box(ax, x, y, w, h, face, edge="black", lw=1.0, ls="-", hatch=None, z=1):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw,
                           linestyle=ls, hatch=hatch, zorder=z))


def _arrow(ax, start, end, color, lw=1.6, style="-|>", z=3):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color,
                                 linewidth=lw, zorder=z, shrinkA=0, shrinkB=0))


def draw_grid() -> plt.Figure:
    """n = 200, 64 threads per block: 4 blocks, 256 threads, the last 56 with no element to touch."""
    n, threads, blocks = 200, 64, 4
    total = threads * blocks

    fig, ax = plt.subplots(figsize=(12, 5.6))
    ax.set_xlim(-42, total + 6)
    ax.set_ylim(-1.9, 8.3)
    ax.axis("off")
    ax.set_title(f"A 1-D launch: n = {n} elements, blockDim.x = {threads} threads, "
                 f"gridDim.x = ceil({n} / {threads}) = {blocks} blocks",
                 fontsize=12, pad=4)

    # Row labels on the left.
    rows = {"grid of\nblocks": 6.9, "warps\n(32 threads)": 5.55, "threads": 4.35,
            "global index i": 2.85, f"the array\n(n = {n})": 0.9}
    for text, y in rows.items():
        ax.text(-6, y, text, ha="right", va="center", fontsize=10)

    for b in range(blocks):
        x0 = b * threads
        _box(ax, x0, 6.35, threads, 1.1, "#eef3f8", lw=1.4)
        ax.text(x0 + threads / 2, 6.9, f"block {b}\nblockIdx.x = {b}", ha="center", va="center", fontsize=9)
        for w in range(threads // 32):
            wx = x0 + 32 * w
            _box(ax, wx, 5.1, 32, 0.9, WARP_SHADES[w % 2], lw=0.8)
            ax.text(wx + 16, 5.55, f"warp {w}", ha="center", va="center", fontsize=8.5)
        ax.text(x0 + 1, 3.62, "threadIdx.x = 0", ha="left", va="top", fontsize=7.5)
        ax.text(x0 + threads - 1, 3.62, f"{threads - 1}", ha="right", va="top", fontsize=7.5)

    # One thin cell per thread; idle threads (i >= n) are grey and hatched.
    for t in range(total):
        idle = t >= n
        _box(ax, t, 3.9, 1, 0.9, IDLE if idle else WARP_SHADES[(t // 32) % 2], edge="white", lw=0.3,
             hatch="////" if idle else None)
    _box(ax, 0, 3.9, total, 0.9, "none", lw=1.0, z=2)
    for b in range(1, blocks):
        ax.plot([b * threads] * 2, [3.9, 4.8], color="black", linewidth=1.2, zorder=2)

    # Global index: block boundaries, then the array they cover.
    for b in range(blocks + 1):
        ax.plot([b * threads] * 2, [2.55, 2.7], color="black", linewidth=1)
        ax.text(b * threads, 3.05, f"{b * threads}", ha="center", va="center", fontsize=8.5)
    ax.plot([0, total], [2.62, 2.62], color="black", linewidth=1)

    _box(ax, 0, 0.45, n, 0.9, "#d7e5f2", edge=READ, lw=1.4)
    ax.text(4, 0.9, f"elements 0 … {n - 1}, one per thread", ha="left", va="center", fontsize=10)
    _box(ax, n, 0.45, total - n, 0.9, "white", edge="#888888", lw=1.0, ls="--")
    ax.text(n + (total - n) / 2, 0.9, "no element\npast the end", ha="center", va="center", fontsize=8.5,
            color="#555555")

    # The worked example: block 2, threadIdx.x 40.
    ex_b, ex_t = 2, 40
    i = ex_b * threads + ex_t
    _box(ax, i, 3.9, 1, 0.9, "#c0392b", edge="#c0392b", lw=0.8, z=3)
    _box(ax, i, 0.45, 1, 0.9, "#c0392b", edge="#c0392b", lw=0.8, z=3)
    _arrow(ax, (i + 0.5, 3.85), (i + 0.5, 1.4), "#c0392b", lw=1.4)
    ax.text(i - 3, 2.05, f"i = blockIdx.x * blockDim.x + threadIdx.x\n  = {ex_b} * {threads} + {ex_t} = {i}",
            ha="right", va="center", fontsize=9.5, color="#c0392b", family="monospace",
            bbox=dict(facecolor="white", edgecolor="none", pad=1))

    # The idle threads and the check that stops them.
    ax.annotate("", xy=(n, -0.05), xytext=(total, -0.05),
                arrowprops=dict(arrowstyle="|-|", color="#555555", linewidth=1, mutation_scale=3))
    ax.text(total, -0.75, f"{total - n} idle threads: their i ≥ n, so  if (i < n)  skips them.\n"
            "Without that check they would write past the end of the array.",
            ha="right", va="center", fontsize=9.5, color="#333333")
    ax.text(0, -0.75, "The last block is only partly used whenever n is not a\nmultiple of the block size; "
            "real launches use 128 to 1024\nthreads per block (this picture draws 64 to fit).",
            ha="left", va="center", fontsize=9, color="#555555")
    fig.tight_layout()
    return fig


def draw_fusion() -> plt.Figure:
    """Eager: mul, add, relu each read and write HBM (8 arrays); fused: 4 arrays."""
    fig, ax = plt.subplots(figsize=(12, 6.2))
    ax.set_xlim(0, 12)
    ax.set_ylim(-2.35, 6.1)
    ax.axis("off")

    kern_y, kern_h = 3.5, 1.0
    hbm_y, hbm_h = 0.6, 1.2
    arr_w, arr_h = 0.55, 0.55
    arr_y = hbm_y + (hbm_h - arr_h) / 2

    ax.text(4.1, 5.75, "torch eager:  torch.relu(a * x + b)  runs three kernels",
            ha="center", va="center", fontsize=12, weight="bold")
    ax.text(10.25, 5.75, "one fused kernel", ha="center", va="center", fontsize=12, weight="bold")
    ax.plot([8.35, 8.35], [-0.3, 6.0], color="#999999", linewidth=1, linestyle=":")

    # HBM bands, one under each side.
    for x0, x1 in ((0.25, 8.1), (8.6, 11.9)):
        _box(ax, x0, hbm_y, x1 - x0, hbm_h, "#f1f1f1", edge="#777777")
        ax.text(x0 + 0.08, hbm_y + hbm_h - 0.08, "HBM (the GPU's memory)", ha="left", va="top",
                fontsize=8, color="#555555")
    # On-chip side, labelled once per side.
    for xc in (4.1, 10.25):
        ax.text(xc, kern_y + kern_h + 0.45, "on the chip (SMs, registers)", ha="center", va="center",
                fontsize=8.5, color="#555555")

    def kernel(xc, label, reads, writes, note, temps=()):
        """One kernel box at centre xc, its arrays on the HBM band below, arrows for each trip."""
        w = 2.2
        _box(ax, xc - w / 2, kern_y, w, kern_h, "#fbf3e6", edge="black", lw=1.2)
        ax.text(xc, kern_y + kern_h / 2, label, ha="center", va="center", fontsize=10, family="monospace")
        names = [*reads, *writes]
        gap = 0.18
        span = len(names) * arr_w + (len(names) - 1) * gap
        for k, name in enumerate(names):
            x = xc - span / 2 + k * (arr_w + gap)
            is_read = k < len(reads)
            color = READ if is_read else WRITE
            _box(ax, x, arr_y, arr_w, arr_h, "white", edge=color, lw=1.8,
                 ls="--" if name in temps else "-")
            ax.text(x + arr_w / 2, arr_y + arr_h / 2, name, ha="center", va="center", fontsize=10,
                    color=color, weight="bold")
            cx = x + arr_w / 2
            if is_read:
                _arrow(ax, (cx, arr_y + arr_h + 0.05), (cx, kern_y - 0.05), color)
            else:
                _arrow(ax, (cx, kern_y - 0.05), (cx, arr_y + arr_h + 0.05), color)
        ax.text(xc, hbm_y - 0.35, note, ha="center", va="center", fontsize=9)

    kernel(1.45, "mul\nt1 = a * x", ("a", "x"), ("t1",), "reads 2, writes 1\n= 3 × 4n bytes", temps=("t1",))
    kernel(4.15, "add\nt2 = t1 + b", ("t1", "b"), ("t2",), "reads 2, writes 1\n= 3 × 4n bytes",
           temps=("t1", "t2"))
    kernel(6.85, "relu\ny = max(t2, 0)", ("t2",), ("y",), "reads 1, writes 1\n= 2 × 4n bytes", temps=("t2",))
    kernel(10.25, "fused\ny = max(a*x + b, 0)", ("a", "x", "b"), ("y",), "reads 3, writes 1\n= 4 × 4n bytes")
    for x0 in (2.55, 5.25):  # time runs left to right: each kernel waits for the one before
        _arrow(ax, (x0 + 0.05, kern_y + kern_h / 2), (x0 + 0.5, kern_y + kern_h / 2), "#555555", lw=1.2)

    # Totals as unit blocks: one block = one fp32 array of n elements = 4n bytes.
    def units(y, count, label, total):
        for k in range(count):
            _box(ax, 2.6 + k * 0.58, y, 0.5, 0.45, "#d9d9d9", edge="#555555")
        ax.text(2.45, y + 0.22, label, ha="right", va="center", fontsize=10)
        ax.text(2.6 + count * 0.58 + 0.1, y + 0.22, total, ha="left", va="center", fontsize=10)

    units(-1.35, 8, "eager, 3 kernels", "8 arrays = 32n bytes")
    units(-2.1, 4, "fused, 1 kernel", "4 arrays = 16n bytes   →  at best 32 / 16 = 2× faster")
    ax.text(0.25, -0.75, "Bytes moved (one grey block = one fp32 array of n elements = 4n bytes):",
            ha="left", va="center", fontsize=9.5)
    ax.text(11.9, -0.75, "blue: read   orange: written   dashed: temporaries that only link kernels",
            ha="right", va="center", fontsize=8.5, color="#555555")
    fig.tight_layout()
    return fig


def save_figures(drawers, dpi: int = DPI) -> None:
    """Draw each (file name, function) and save it beside these scripts; every chapter's script uses it."""
    for name, draw in drawers:
        fig = draw()
        path = HERE / name
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


def main() -> None:
    save_figures((("ch01_grid.png", draw_grid), ("ch01_fusion.png", draw_fusion)))


if __name__ == "__main__":
    main()
