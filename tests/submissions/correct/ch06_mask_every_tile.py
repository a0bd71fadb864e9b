"""6, the plainest causal flash forward: one key loop that applies the mask to every tile, with
causal block skipping (the loop ends at the tile holding the block's last row), 64 x 64 tiles and 8
warps. It is the variant that measured slowest against its own non-causal launch: 1.36x on an H200
(tests/submissions/correct/README.md, "What the measurements taught"), which failed the old 1.4x bar
for `6-causal` although the kernel does exactly what that bar describes (skips the tiles after the
diagonal). The bar is 1.2x since; this entry keeps it honest: a correct kernel that skips must pass,
and `ch06/no_skip` (causal mask, no skipping, about 0.86x) must still fail. On an H100, ten isolated
gradings gave 1.435-1.460x (assets/results/timing-integrity/isolated-grading-h100/C/).

It also keeps the work count honest: with 64-row tiles and 8 warps, Triton 3.6 issues every MMA 1.5
times on an H100, so its causal launch does 76% of the tensor-core work of the whole N x N product
(its causal=False launch 150%). A first rule (at most 75% of the product) rejected it; the rule now
also accepts 60% of the kernel's own causal=False count (assets/results/timing-integrity/isolated-grading-h100/J/).

Independent of the solution: no helper function, a single loop for both modes, natural-base
exponentials with the scale applied to the scores, its own names.
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
    stop = N
    if CAUSAL:
        stop = tl.minimum((block + 1) * BLOCK_M, N)     # skip every tile after the diagonal

    for start in range(0, stop, BLOCK_N):               # one loop: every tile is masked
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
                                                    D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                                                    num_warps=8)
''',
}
EXPECT = {"cells": ["attention-visible", "attention-hidden", "attention-memory", "attention-speed", "causal-speed"],
          "device": "cpu"}
