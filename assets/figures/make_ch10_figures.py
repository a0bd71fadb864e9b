"""Draw chapter 10's two figures.

    python assets/figures/make_ch10_figures.py

writes, beside this script:
- ch10_paged_cache.png: three sequences' block tables pointing into one pool of pages of P tokens (vLLM's
  layout, (num_pages, P, H_kv, D)), the pages in no particular order, two pages shared by every sequence (a
  common prefix), the last page of each sequence partly filled, and pages that no table names
- ch10_split_kv.png: one long sequence's tokens split into chunks, one program per chunk writing a partial
  output and its log-sum-exp, and a second kernel merging them with chapter 7's rule
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

SEQ = ("#f4c7a1", "#b3ded8", "#d9c8ec")          # one colour a sequence
SHARED, FREE, EDGE, LINE = "#f7e08a", "#eeeeee", "#444444", "#555555"


def draw_paged_cache() -> plt.Figure:
    # (pages of each sequence in order: (physical page, tokens used of its P)); pages 3 and 9 are a shared prefix
    P = 4
    tables = {0: [(3, 4), (9, 4), (6, 4), (1, 2)],
              1: [(3, 4), (9, 4), (11, 3)],
              2: [(3, 4), (9, 4), (0, 4), (7, 4), (4, 1)]}
    pool = 13
    fig, ax = plt.subplots(figsize=(12, 4.4))
    ax.set_xlim(-0.6, 23)
    ax.set_ylim(-0.4, 8.4)
    ax.axis("off")
    ax.set_title("A paged KV cache: block tables (left) name pages of one pool (right), in any order",
                 fontsize=11, weight="bold")
    # the block tables
    ax.text(0, 7.9, "block_table  (B, max_pages), int32", fontsize=9, weight="bold")
    width = max(len(t) for t in tables.values())
    row_y = {}
    for b, pages in tables.items():
        y = 6.6 - 2.0 * b
        row_y[b] = y
        ax.text(-0.3, y + 0.35, f"b={b}", ha="right", va="center", fontsize=8.5)
        for j in range(width):
            if j < len(pages):
                page, _ = pages[j]
                face = SHARED if j < 2 else SEQ[b]
                _box(ax, j * 1.05, y, 0.95, 0.7, face, edge=EDGE, lw=0.8)
                ax.text(j * 1.05 + 0.475, y + 0.35, str(page), ha="center", va="center", fontsize=9)
            else:
                _box(ax, j * 1.05, y, 0.95, 0.7, "white", edge="#999999", lw=0.6, ls="--")
                ax.text(j * 1.05 + 0.475, y + 0.35, "-1", ha="center", va="center", fontsize=8, color="#777777")
        used = sum(n for _, n in pages)
        ax.text(width * 1.05 + 0.2, y + 0.35, f"length {used}", va="center", fontsize=8.5)
    # the pool: page i at column i, P slots high
    x0, slot = 8.4, 0.62
    ax.text(x0, 7.9, f"k_cache, v_cache  (num_pages, P = {P}, H_kv, D)", fontsize=9, weight="bold")
    owner = {}
    for b, pages in tables.items():
        for j, (page, used) in enumerate(pages):
            owner.setdefault(page, (b if j >= 2 else None, used))
    for i in range(pool):
        x = x0 + i * 1.1
        ax.text(x + 0.45, 7.2, str(i), ha="center", fontsize=8)
        for s in range(P):
            y = 6.2 - s * slot * 1.2
            if i in owner:
                b, used = owner[i]
                face = (SHARED if b is None else SEQ[b]) if s < used else "white"
                hatch = None if s < used else "///"
            else:
                face, hatch = FREE, "///"
            _box(ax, x, y, 0.9, slot, face, edge=EDGE, lw=0.5, hatch=hatch)
    ax.text(x0, 1.05, "slot s of page p holds one token's K (and V) for every KV head, D fp16 values each.\n"
            "Hatched: slots past a sequence's length, and pages no table names. They may hold anything:\n"
            "the grader fills them with +inf, so every load past `lengths[b]` must be masked.",
            fontsize=8.5, va="top", linespacing=1.45)
    ax.text(0, 1.05, "Colour: the sequence a page belongs to; yellow: a prefix\n"
            "all three share (pages 3 and 9, first in every table).\n"
            "Token t of sequence b: page block_table[b, t // P], slot t % P.",
            fontsize=8.5, va="top", linespacing=1.45)
    fig.tight_layout()
    return fig


def draw_split_kv() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(12, 4.6))
    ax.set_xlim(-0.2, 16)
    ax.set_ylim(-1.6, 5.2)
    ax.axis("off")
    ax.set_title("Split-KV: one long sequence's tokens in chunks, a program each, partial results merged",
                 fontsize=11, weight="bold")
    chunks = 6
    for c in range(chunks):
        x = 0.3 + c * 2.6
        _box(ax, x, 3.6, 2.4, 0.7, SEQ[c % 3], edge=EDGE, lw=0.8)
        ax.text(x + 1.2, 3.95, f"tokens {c}·C ... {c + 1}·C-1", ha="center", va="center", fontsize=8)
        _arrow(ax, (x + 1.2, 3.6), (x + 1.2, 2.75), LINE, lw=0.8)
        _box(ax, x + 0.2, 1.9, 2.0, 0.8, "white", edge=EDGE, lw=0.8)
        ax.text(x + 1.2, 2.3, f"program {c}\n(o_{c}, lse_{c})", ha="center", va="center", fontsize=8)
        _arrow(ax, (x + 1.2, 1.9), (8.1, 0.55), LINE, lw=0.7)
    _box(ax, 3.2, -0.35, 9.8, 0.9, SHARED, edge=EDGE, lw=1.0)
    ax.text(8.1, 0.1, "merge:  M = max_c lse_c,   o = Σ_c 2^(lse_c − M) o_c  /  Σ_c 2^(lse_c − M)",
            ha="center", va="center", fontsize=9)
    ax.text(0.3, 4.75, "one sequence of 32,768 tokens and a KV head: unsplit, one program reads it all, on one SM",
            fontsize=8.5)
    ax.text(0.3, -1.05, "each program does chapter 6's online softmax over its chunk only; its lse is its chunk's "
            "log-sum-exp. A chunk with no tokens left gives lse = −∞ and weight 0.", fontsize=8.5)
    fig.tight_layout()
    return fig


def main() -> None:
    save_figures((("ch10_paged_cache.png", draw_paged_cache), ("ch10_split_kv.png", draw_split_kv)))


if __name__ == "__main__":
    main()
