"""Draw chapter 9's two figures.

    python assets/figures/make_ch09_figures.py

writes, beside this script:
- ch09_formats.png: every positive finite e4m3 and e5m2 value on a log2 axis, with the step between
  neighbours: 8 values per power of two in e4m3 (4 in e5m2), the subnormals' fixed step below the smallest
  normal number, and where each format stops (448, 57,344)
- ch09_scales.png: one tensor of activations quantized three ways: one scale for the whole tensor (an
  outlier sets it, and small values fall below the smallest code), one per 1 x 128 group of a row
  (activations, exercise 9a), one per 128 x 128 block (weights, exercise 9b)
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen needed
import matplotlib.pyplot as plt
import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]
from make_ch01_figures import _box, save_figures

DPI = 110
GROUP_COLORS = ("#d9e7f5", "#f4c7a1", "#b3ded8", "#e8d5f0")
EDGE = "#444444"


def _positive_values(dtype: torch.dtype) -> np.ndarray:
    codes = torch.arange(1, 128, dtype=torch.uint8).view(dtype).float()
    return np.sort(codes[torch.isfinite(codes)].numpy())


def draw_formats() -> plt.Figure:
    fig, axes = plt.subplots(2, 1, figsize=(8.4, 3.6), sharex=True)
    for ax, (name, dtype, normal) in zip(axes, (("e4m3 (4 exponent bits, 3 mantissa)", torch.float8_e4m3fn, 2.0 ** -6),
                                                ("e5m2 (5 exponent bits, 2 mantissa)", torch.float8_e5m2, 2.0 ** -14))):
        values = _positive_values(dtype)
        steps = np.diff(values)
        ax.scatter(np.log2(values[1:]), np.log2(steps), s=7,
                   c=["#c0504d" if v < normal else "#1f77b4" for v in values[1:]], zorder=3)
        ax.axvline(np.log2(normal), color="#888888", lw=0.8, ls="--")
        ax.text(np.log2(normal) + 0.2, np.log2(steps).max() - 1, "smallest normal", fontsize=7, color="#555555")
        ax.text(np.log2(values[-1]), np.log2(steps[-1]) + 1.2, f"{values[-1]:,.0f}", fontsize=7, ha="center")
        ax.set_ylabel("log2(step)", fontsize=8)
        ax.set_title(f"{name}: {len(values)} positive finite values", fontsize=8.5, loc="left")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[1].set_xlabel("log2(value): each positive value, against the step to the next one "
                       "(red: subnormals, a fixed step)", fontsize=8)
    fig.tight_layout()
    return fig


def draw_scales() -> plt.Figure:
    rows, cols = 4, 512
    fig, axes = plt.subplots(1, 3, figsize=(9.6, 2.5))
    panels = (("one scale for the tensor", (rows, cols)), ("one scale per 1 x 128 group (9a)", (1, 128)),
              ("one scale per 128 x 128 block (9b's weights)", (128, 128)))
    for ax, (title, (gh, gw)) in zip(axes, panels):
        ax.set_xlim(0, cols)
        ax.set_ylim(0, 256 if gh == 128 else rows)
        height = 256 if gh == 128 else rows
        ax.set_aspect("auto")
        ax.axis("off")
        ax.set_title(title, fontsize=8.5)
        for i, r in enumerate(range(0, height, gh)):
            for j, c in enumerate(range(0, cols, gw)):   # neighbours differ, along a row and down a column
                _box(ax, c, height - r - gh, gw, gh, GROUP_COLORS[(i + j) % len(GROUP_COLORS)], edge=EDGE, lw=0.5)
        if gh == rows:
            ax.text(cols * 0.83, rows * 0.55, "outlier", fontsize=7, ha="center")
            ax.plot([cols * 0.83], [rows * 0.35], marker="*", color="#c0504d", ms=9)
        label = {"one scale for the tensor": "1 scale: the outlier's amax / 448 for every value",
                 "one scale per 1 x 128 group (9a)": f"{rows * cols // 128} scales: each row's groups apart",
                 "one scale per 128 x 128 block (9b's weights)": "8 scales for 256 x 512 weights"}[title]
        ax.text(cols / 2, -0.12 * height, label, fontsize=7.2, ha="center", va="top")
    fig.tight_layout()
    return fig


def main() -> None:
    save_figures((("ch09_formats.png", draw_formats), ("ch09_scales.png", draw_scales)), dpi=DPI)


if __name__ == "__main__":
    main()
