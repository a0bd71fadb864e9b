"""6, the textbook-minimal flash forward: one program per 64 query rows of one (batch, head), 64-key
tiles, the online softmax (natural exp, fp32 scores, P rounded to fp16 for P V, fp32 accumulator),
Triton's default 4 warps, and causal block skipping: the key loop stops at the tile holding the
block's last row. The mask is paid only where it is needed: one loop runs the tiles that lie wholly
before the block's first row (causal) or wholly inside N (not causal) without any mask, and a second
loop runs the rest (the diagonal tile, or the last partial tile) with it.

Independent of the solution: no helper function (the two loops are written out), 64 x 64 tiles,
natural-base exponentials with the scale applied to the scores, 4 warps instead of 8, its own names.

Why it should pass: every row's first tile contains key 0, so the running max is finite from then on
and no inf - inf appears; padded rows are never stored and keys past N are masked. Memory: nothing
is allocated. Speed: measured 12.3-12.5x naive attention at D = 64 (bar 3.0x) and 1.79-1.83x causal
against its own non-causal launch (bar then 1.4x, 28% margin; 1.2x since) in two sessions
(tests/submissions/correct/_measure.py, in-process, NVIDIA H200, 2026-11-21); the same kernel with
128-row blocks: 7.9x and 1.78-1.80x.

Why two loops: in the same measurements, this kernel with the causal mask applied to every tile (one
loop) reached only 1.47-1.49x (4 warps, 64- or 128-row blocks) and 1.36x (8 warps, below the 1.4x bar of the time) of
its own non-causal time; the likely cause (inferred, not profiled) is that a full BLOCK_M x BLOCK_N
comparison on every causal tile makes the causal tiles dearer than the non-causal ones, which
compare one row of keys with N.
"""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": r'''
import math

import triton
import triton.language as tl


@triton.jit
def flash_forward(Q, K, V, O, N, sm_scale,
                  D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    block = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * N * D        # this (batch, head)'s first element
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)

    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        plain_end = block * BLOCK_M                     # tiles before the first row: all visible
        stop = tl.minimum((block + 1) * BLOCK_M, N)     # no key after the block's last row
    else:
        plain_end = (N // BLOCK_N) * BLOCK_N            # whole tiles inside N
        stop = N

    for start in range(0, plain_end, BLOCK_N):          # no mask needed
        keys = start + tl.arange(0, BLOCK_N)
        k_t = tl.load(K + base + keys[None, :] * D + dims[:, None])
        scores = tl.dot(q, k_t) * sm_scale
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        shrink = tl.exp(row_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * shrink + tl.sum(p, 1)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :])
        acc = acc * shrink[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max

    for start in range(plain_end, stop, BLOCK_N):       # the diagonal, or the last partial tile
        keys = start + tl.arange(0, BLOCK_N)
        k_t = tl.load(K + base + keys[None, :] * D + dims[:, None], mask=keys[None, :] < N, other=0.0)
        scores = tl.dot(q, k_t) * sm_scale
        visible = keys[None, :] < N
        if CAUSAL:
            visible = visible & (keys[None, :] <= rows[:, None])
        scores = tl.where(visible, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        shrink = tl.exp(row_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * shrink + tl.sum(p, 1)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)
        acc = acc * shrink[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(O + base + rows[:, None] * D + dims[None, :], out.to(tl.float16), mask=rows[:, None] < N)


BLOCK_M, BLOCK_N = 64, 64


def attention(q, k, v, out, causal):
    B, H, N, D = q.shape
    flash_forward[(triton.cdiv(N, BLOCK_M), B * H)](q, k, v, out, N, 1.0 / math.sqrt(D),
                                                    D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal)
''',
}
EXPECT = {"cells": ["attention-visible", "attention-hidden", "attention-memory", "attention-speed", "causal-speed"],
          "device": "cpu"}
