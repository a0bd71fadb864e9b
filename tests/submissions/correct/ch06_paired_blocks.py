"""6 with paired query blocks: each program takes two 64-row query blocks of one (batch, head), block i
and block T - 1 - i (T blocks in all; the middle one, when T is odd, only once), so that with the
causal mask every program does about the same number of key tiles (i + 1 plus T - i). Each block
runs a complete flash pass through a helper, with 64-key tiles, 4 warps, base-2 exponentials, a mask
on every tile, and causal tile skipping (a block's loop ends at its diagonal tile).

Independent of the solution: two query blocks per program (a different decomposition of the grid:
ceil(T / 2) x (batch * head) programs), a helper that processes and stores a whole query block, and
a load-balancing order for the causal case.

Why it should pass: the pairing visits every block exactly once (i < T - 1 - i for i < T / 2, and i
= T - 1 - i is done once); each pass is a plain online softmax whose first tile contains key 0.
Memory: nothing is allocated. Speed: measured 12.6x naive at D = 64 (bar 3.0x) and 1.69-1.70x causal
against its own non-causal launch (bar then 1.4x, 21% margin; 1.2x since) (tests/submissions/correct/_measure.py,
in-process, NVIDIA H200, 2026-11-21). With a mask on every tile a causal tile is likely dearer than
a non-causal one (a full BLOCK x BLOCK comparison instead of one row of keys against N; inferred,
not profiled): the same kernel with one block per program measured only 1.47x causal; the pairing,
which gives every program the same number of tiles and so removes the launch's long tail, is what
lifts it to 1.7x.
"""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": r'''
import math

import triton
import triton.language as tl


@triton.jit
def attend_block(Q, K, V, O, block, N, qk_scale,
                 D: tl.constexpr, BLOCK: tl.constexpr, CAUSAL: tl.constexpr):
    """The whole forward pass for query rows block * BLOCK ...: keys in tiles of BLOCK, then the store."""
    rows = block * BLOCK + tl.arange(0, BLOCK)
    d = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + d[None, :], mask=rows[:, None] < N, other=0.0)
    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    acc = tl.zeros([BLOCK, D], tl.float32)
    if CAUSAL:
        n_tiles = block + 1
    else:
        n_tiles = tl.cdiv(N, BLOCK)
    for t in range(0, n_tiles):
        keys = t * BLOCK + tl.arange(0, BLOCK)
        k_t = tl.load(K + keys[None, :] * D + d[:, None], mask=keys[None, :] < N, other=0.0)
        v = tl.load(V + keys[:, None] * D + d[None, :], mask=keys[:, None] < N, other=0.0)
        s = tl.dot(q, k_t) * qk_scale
        ok = keys[None, :] < N
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + rows[:, None] * D + d[None, :], (acc / l_i[:, None]).to(tl.float16), mask=rows[:, None] < N)


@triton.jit
def flash_pairs(Q, K, V, O, N, qk_scale, D: tl.constexpr, BLOCK: tl.constexpr, CAUSAL: tl.constexpr):
    head = tl.program_id(1).to(tl.int64) * N * D
    first = tl.program_id(0)
    last = tl.cdiv(N, BLOCK) - 1 - first
    attend_block(Q + head, K + head, V + head, O + head, first, N, qk_scale, D, BLOCK, CAUSAL)
    if last != first:
        attend_block(Q + head, K + head, V + head, O + head, last, N, qk_scale, D, BLOCK, CAUSAL)


def attention(q, k, v, out, causal):
    B, H, N, D = q.shape
    BLOCK = 64
    blocks = triton.cdiv(N, BLOCK)
    grid = ((blocks + 1) // 2, B * H)
    flash_pairs[grid](q, k, v, out, N, math.log2(math.e) / math.sqrt(D), D=D, BLOCK=BLOCK, CAUSAL=causal,
                      num_warps=4)
''',
}
EXPECT = {"cells": ["attention-visible", "attention-hidden", "attention-memory", "attention-speed", "causal-speed"],
          "device": "cpu"}
