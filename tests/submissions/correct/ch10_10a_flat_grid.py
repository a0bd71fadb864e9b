"""10a with a flat grid and the keys loaded already transposed: one program per (sequence, KV head) numbered along a
single axis, sequence-major; each step loads K as a (D x BLOCK_N) tile straight from the cache (chapter 6's k_t) and
V as (BLOCK_N x D); 32 tokens a step on every GPU, 8 warps; the loop split in two, whole tiles without a length mask
and the last partial tile with it.

Independent of the solution: a 1-D grid, K loaded transposed, two loops (the mask only on the last tile), 32 tokens
and 8 warps, its own names.

Why it should pass: it reads every key and value once for the group's query heads, masks only the one tile that crosses
the length (whole tiles hold no slot past it), and starts each row's running max from its first tile, which holds token
0. Speed: 0.416 of the copy ceiling on an H200, isolated (assets/results/exploits/ch10-h200): its kernel took 0.597 ms a
call against the solution's 0.298, under the starting bar of 0.60 and 12% over the calibrated 0.37.
"""
CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "decode-solution": r'''
import math

import triton
import triton.language as tl

from grader.chapters import ch10


@triton.jit
def tile(q, K, V, row_table, t0, n, kvh, c, m, l, acc, HKV: tl.constexpr, D: tl.constexpr, P: tl.constexpr,
         T: tl.constexpr, MASK: tl.constexpr):
    t = t0 + tl.arange(0, T)
    d = tl.arange(0, D)
    if MASK:
        live = t < n
        pg = tl.load(row_table + t // P, mask=live, other=0)
    else:
        pg = tl.load(row_table + t // P)
    base = ((pg.to(tl.int64) * P + t % P) * HKV + kvh) * D
    if MASK:
        k_t = tl.load(K + base[None, :] + d[:, None], mask=live[None, :], other=0.0)
        v = tl.load(V + base[:, None] + d[None, :], mask=live[:, None], other=0.0)
        s = tl.where(live[None, :], tl.dot(q, k_t) * c, float("-inf"))
    else:
        k_t = tl.load(K + base[None, :] + d[:, None])
        v = tl.load(V + base[:, None] + d[None, :])
        s = tl.dot(q, k_t) * c
    m2 = tl.maximum(m, tl.max(s, 1))
    a = tl.exp2(m - m2)
    p = tl.exp2(s - m2[:, None])
    return m2, l * a + tl.sum(p, 1), tl.dot(p.to(tl.float16), v, acc * a[:, None])


@triton.jit
def flat_kernel(Q, K, V, O, TABLE, LENGTHS, c, table_stride,
                H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, P: tl.constexpr, G: tl.constexpr,
                ROWS: tl.constexpr, T: tl.constexpr):
    pid = tl.program_id(0)
    seq = pid // HKV
    kvh = pid % HKV
    n = tl.load(LENGTHS + seq)
    i = tl.arange(0, ROWS)
    d = tl.arange(0, D)
    at = (seq * H + kvh * G + i)[:, None] * D + d[None, :]
    q = tl.load(Q + at, mask=i[:, None] < G, other=0.0)
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    row_table = TABLE + seq * table_stride
    whole = (n // T) * T
    for t0 in range(0, whole, T):
        m, l, acc = tile(q, K, V, row_table, t0, n, kvh, c, m, l, acc, HKV, D, P, T, False)
    if whole < n:
        m, l, acc = tile(q, K, V, row_table, whole, n, kvh, c, m, l, acc, HKV, D, P, T, True)
    tl.store(O + at, (acc / l[:, None]).to(tl.float16), mask=i[:, None] < G)


def decode_attention(q, k_cache, v_cache, block_table, lengths, out):
    B, H, D = q.shape
    P, HKV = k_cache.shape[1], k_cache.shape[2]
    flat_kernel[(B * HKV,)](q, k_cache, v_cache, out, block_table, lengths, 1.4426950408889634 / math.sqrt(D),
                            block_table.stride(0), H=H, HKV=HKV, D=D, P=P, G=H // HKV, ROWS=ch10.group_rows(H, HKV),
                            T=32, num_warps=8)
''',
}
EXPECT = {"cells": ["decode-visible", "decode-hidden", "decode-speed"], "device": "cpu"}
