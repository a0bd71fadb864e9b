"""Draw chapter 4's figure for exercise 4c (mma.sync, swizzled shared memory, a cp.async pipeline).

    python assets/figures/make_ch04_swizzle_figure.py

writes, beside this script:
- ch04_swizzle.png: left, 8 rows of a B tile in shared memory, each row 8 16-byte chunks (128 bytes,
  one full sweep of the 32 banks), stored plainly and XOR-swizzled (chunk c of row r at c ^ r); the
  chunks one ldmatrix phase reads (logical chunk 2 of rows 0-7) are outlined. Right, a 3-stage
  cp.async pipeline: while the warps multiply slice t, the copies of slices t+1 and t+2 are in flight.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 110
GROUP_COLOURS = plt.get_cmap("tab10").colors   # one colour per 16-byte bank group (4 banks each)
READ_CHUNK = 2


def _tile(ax, x0, title, swizzled: bool) -> None:
    ax.text(x0 + 4, 9.3, title, ha="center", fontsize=11)
    for g in range(8):
        ax.text(x0 + g + 0.5, 8.45, f"{4 * g}-{4 * g + 3}", ha="center", fontsize=6.5, color="#555555")
    ax.text(x0 - 0.25, 8.45, "banks", ha="right", fontsize=7, color="#555555")
    for r in range(8):
        y = 7 - r
        ax.text(x0 - 0.25, y + 0.5, f"row {r}", ha="right", va="center", fontsize=8)
        for c in range(8):                       # c: the logical chunk (columns 8c .. 8c+7)
            slot = c ^ r if swizzled else c      # where it is stored in the row = its bank group
            read = c == READ_CHUNK
            ax.add_patch(Rectangle((x0 + slot, y), 1, 1, facecolor=GROUP_COLOURS[c], alpha=0.9 if read else 0.28,
                                   edgecolor="black" if read else "white", linewidth=2.2 if read else 0.8))
            ax.text(x0 + slot + 0.5, y + 0.5, str(c), ha="center", va="center", fontsize=8,
                    fontweight="bold" if read else "normal")
    groups = {(c ^ r if swizzled else c) for r in range(8) for c in (READ_CHUNK,)}
    verdict = ("8 bank groups: 1 pass, no conflict" if len(groups) == 8
               else f"{len(groups)} bank group for 8 rows: 8 passes (8-way conflict)")
    ax.text(x0 + 4, -0.7, verdict, ha="center", fontsize=9.5, color="#1a7f1a" if len(groups) == 8 else "#b22222")


def _pipeline(ax, x0) -> None:
    stages, slices, width = 3, 5, 1.35
    ax.text(x0 + 4.6, 9.3, f"{stages}-stage cp.async pipeline (wait_group {stages - 2})", ha="center", fontsize=11)
    lanes = {"copies": 6.2, "MMAs": 3.6}
    for name, y in lanes.items():
        ax.text(x0 - 0.2, y + 0.45, name, ha="right", va="center", fontsize=9)
    copy_len = (stages - 1) * width          # a copy takes as long as 2 slices of math here
    for t in range(slices):
        start = t * width
        ax.add_patch(Rectangle((x0 + start, lanes["copies"] + 0.9 * (t % 2) * 0.45 - 0.2), copy_len, 0.4,
                               facecolor=GROUP_COLOURS[t % 10], alpha=0.45, edgecolor="black", linewidth=0.6))
        ax.text(x0 + start + copy_len / 2, lanes["copies"] + 0.9 * (t % 2) * 0.45, f"slice {t}", ha="center",
                va="center", fontsize=7)
        mma_start = start + copy_len
        ax.add_patch(Rectangle((x0 + mma_start, lanes["MMAs"]), width, 0.9, facecolor=GROUP_COLOURS[t % 10],
                               alpha=0.9, edgecolor="black", linewidth=0.6))
        ax.text(x0 + mma_start + width / 2, lanes["MMAs"] + 0.45, f"t={t}", ha="center", va="center", fontsize=8)
    ax.annotate("", xy=(x0 + copy_len, 2.9), xytext=(x0, 2.9), arrowprops=dict(arrowstyle="<->"))
    ax.text(x0 + copy_len / 2, 2.35, "prologue: slices 0, 1", ha="center", fontsize=8)
    ax.text(x0 + 4.6, 1.2, "from then on the tensor cores never wait, as long as one copy\n"
                           f"takes less than {stages - 1} slices of math ({stages} buffers of each tile)",
            ha="center", fontsize=9)


def draw_swizzle() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(13.5, 4.6))
    ax.set_xlim(-1.5, 30.5)
    ax.set_ylim(-1.3, 10)
    ax.axis("off")
    _tile(ax, 0.5, "plain: chunk c at slot c", swizzled=False)
    _tile(ax, 10.5, "XOR-swizzled: chunk c at slot c ^ row", swizzled=True)
    _pipeline(ax, 21.0)
    fig.tight_layout()
    return fig


def main() -> None:
    fig = draw_swizzle()
    fig.savefig(HERE / "ch04_swizzle.png", dpi=DPI)
    plt.close(fig)
    print(f"wrote {HERE / 'ch04_swizzle.png'}")


if __name__ == "__main__":
    main()
