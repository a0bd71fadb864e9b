"""6 with the heaviest query blocks launched first: the grid is (batch * head, query blocks) and
program (bh, j) takes query block T - 1 - j, so the causal launch starts with the blocks that have
the most key tiles and ends with the short ones. 128 query rows a block, 64-key tiles, 8 warps; the
tiles wholly before the block's first row run without any mask, and only the tiles from there on
(the diagonal, or the last partial tile) are masked. K is loaded as it lies (keys x D) and
transposed in registers with tl.trans; the softmax runs in base 2 with log2(e) folded into the
scale.

Independent of the solution: the grid's axes swapped and the query blocks reversed, K loaded
untransposed, and the two loops written inline around one masked/unmasked step function with a
different signature.

Why it should pass: the first tile of every row contains key 0, so the running max is finite from
then on; rows past N are never stored and keys past N are masked. Memory: nothing is allocated.
Speed: the calibrated solution's tiles (128 x 64, 8 warps) and loop split: 14.6x naive at D = 64 and
1.69-1.74x causal speedup on an H200 (assets/results/README.md), against bars of 3.0x and 1.4x (1.2x since).
Measured: 14.5x naive and 1.97x causal (tests/submissions/correct/_measure.py, in-process, 2 timed
runs, NVIDIA H200, 2026-11-21): 41% above the causal bar.
"""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": r'''
import math

import triton
import triton.language as tl


@triton.jit
def softmax_step(q, k_rows, v_rows, rows, keys, n, scale2, m_i, l_i, acc, MASK: tl.constexpr, CAUSAL: tl.constexpr):
    s = tl.dot(q, tl.trans(k_rows)) * scale2              # base-2 scores, fp32
    if MASK:
        ok = keys[None, :] < n
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        s = tl.where(ok, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    p = tl.exp2(s - m_new[:, None])
    fade = tl.exp2(m_i - m_new)
    l_new = l_i * fade + tl.sum(p, 1)
    acc = tl.dot(p.to(tl.float16), v_rows, acc * fade[:, None])
    return m_new, l_new, acc


@triton.jit
def flash_reverse(Q, K, V, O, N, scale2,
                  D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    block = tl.num_programs(1) - 1 - tl.program_id(1)    # longest causal rows first
    Q += bh * N * D
    K += bh * N * D
    V += bh * N * D
    O += bh * N * D
    first = block * BM
    rows = first + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)
    m_i = tl.zeros([BM], tl.float32) - float("inf")
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)

    if CAUSAL:
        clean = first                       # tiles before the block's first row: nothing masked
        stop = tl.minimum(first + BM, N)
    else:
        clean = (N // BN) * BN              # whole tiles inside N
        stop = N
    for start in range(0, clean, BN):
        keys = start + tl.arange(0, BN)
        k_rows = tl.load(K + keys[:, None] * D + cols[None, :])
        v_rows = tl.load(V + keys[:, None] * D + cols[None, :])
        m_i, l_i, acc = softmax_step(q, k_rows, v_rows, rows, keys, N, scale2, m_i, l_i, acc, False, CAUSAL)
    for start in range(clean, stop, BN):
        keys = start + tl.arange(0, BN)
        k_rows = tl.load(K + keys[:, None] * D + cols[None, :], mask=keys[:, None] < N, other=0.0)
        v_rows = tl.load(V + keys[:, None] * D + cols[None, :], mask=keys[:, None] < N, other=0.0)
        m_i, l_i, acc = softmax_step(q, k_rows, v_rows, rows, keys, N, scale2, m_i, l_i, acc, True, CAUSAL)
    tl.store(O + rows[:, None] * D + cols[None, :], (acc / l_i[:, None]).to(tl.float16), mask=rows[:, None] < N)


def attention(q, k, v, out, causal):
    B, H, N, D = q.shape
    BM, BN = 128, 64
    scale2 = math.log2(math.e) / math.sqrt(D)
    flash_reverse[(B * H, triton.cdiv(N, BM))](q, k, v, out, N, scale2, D=D, BM=BM, BN=BN, CAUSAL=causal,
                                              num_warps=8, num_stages=3)
''',
}
EXPECT = {"cells": ["attention-visible", "attention-hidden", "attention-memory", "attention-speed", "causal-speed"],
          "device": "cpu"}
