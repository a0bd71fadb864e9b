"""10b with chunks of a fixed 512 tokens and chapter 7's (max, sum) merge: one program per (sequence, KV head, chunk),
each writing its group's unnormalised accumulator, running max and running sum (three arrays, natural-log units); a
merge program per (sequence, KV head) rescales every chunk's sum and accumulator to the largest max, adds them and
divides once, for the whole group of query heads at a time.

Independent of the solution: a fixed chunk length (never sized from the SM count), the unnormalised (m, l, acc)
partial results and exercise 7.1's combine rule instead of normalised outputs and a log-sum-exp, a merge program per
KV head holding the group, natural exp, its own names.

Why it should pass: chunks of 512 tokens give 10b's 32,768-token sequence 64 chunks, 512 programs for its 8 KV heads:
several for each SM of an H100 or an H200; an empty chunk writes max -inf and sum 0, which the merge weighs by exp(-inf)
= 0. Speed: 0.211 of the copy ceiling on an H200, isolated (assets/results/exploits/ch10-h200): its two kernels took
0.102 ms of a 0.172 ms call, the merge 0.052 ms of them; under the starting bar of 0.40, 41% over the calibrated 0.15.
"""
CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "split-solution": r'''
import math

import torch
import triton
import triton.language as tl

from grader.chapters import ch10

CHUNK = 512


@triton.jit
def chunk_kernel(Q, K, V, ACC, MAX, SUM, TABLE, LENGTHS, scale, table_stride, nchunks,
                 H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, P: tl.constexpr, G: tl.constexpr,
                 ROWS: tl.constexpr, T: tl.constexpr, CHUNK: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    c = tl.program_id(2)
    n = tl.load(LENGTHS + seq)
    end = tl.minimum((c + 1) * CHUNK, n)
    i = tl.arange(0, ROWS)
    d = tl.arange(0, D)
    q = tl.load(Q + (seq * H + kvh * G + i)[:, None] * D + d[None, :], mask=i[:, None] < G, other=0.0)
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for t0 in range(c * CHUNK, end, T):
        t = t0 + tl.arange(0, T)
        live = t < end
        pg = tl.load(TABLE + seq * table_stride + t // P, mask=live, other=0)
        base = ((pg.to(tl.int64) * P + t % P) * HKV + kvh) * D
        k = tl.load(K + base[:, None] + d[None, :], mask=live[:, None], other=0.0)
        v = tl.load(V + base[:, None] + d[None, :], mask=live[:, None], other=0.0)
        s = tl.where(live[None, :], tl.dot(q, tl.trans(k)) * scale, float("-inf"))
        m2 = tl.maximum(m, tl.max(s, 1))
        a = tl.exp(m - m2)
        p = tl.exp(s - m2[:, None])
        l = l * a + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v, acc * a[:, None])
        m = m2
    slot = ((seq * HKV + kvh) * nchunks + c) * ROWS + i          # [sequence, KV head, chunk, row]
    tl.store(MAX + slot, m)
    tl.store(SUM + slot, l)
    tl.store(ACC + slot[:, None] * D + d[None, :], acc)


@triton.jit
def combine_kernel(ACC, MAX, SUM, O, nchunks, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                   G: tl.constexpr, ROWS: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    i = tl.arange(0, ROWS)
    d = tl.arange(0, D)
    first = (seq * HKV + kvh) * nchunks * ROWS
    top = tl.full([ROWS], float("-inf"), tl.float32)
    for c in range(0, nchunks):
        top = tl.maximum(top, tl.load(MAX + first + c * ROWS + i))
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for c in range(0, nchunks):
        at = first + c * ROWS + i
        f = tl.exp(tl.load(MAX + at) - top)      # a chunk that saw nothing: exp(-inf) = 0
        l += tl.load(SUM + at) * f
        acc += tl.load(ACC + at[:, None] * D + d[None, :]) * f[:, None]
    tl.store(O + (seq * H + kvh * G + i)[:, None] * D + d[None, :], (acc / l[:, None]).to(tl.float16),
             mask=i[:, None] < G)


def decode_attention_split(q, k_cache, v_cache, block_table, lengths, out):
    B, H, D = q.shape
    P, HKV = k_cache.shape[1], k_cache.shape[2]
    rows = ch10.group_rows(H, HKV)
    nchunks = -(-(block_table.shape[1] * P) // CHUNK)
    acc = torch.empty((B, HKV, nchunks, rows, D), device=q.device, dtype=torch.float32)
    top = torch.empty((B, HKV, nchunks, rows), device=q.device, dtype=torch.float32)
    total = torch.empty_like(top)
    chunk_kernel[(B, HKV, nchunks)](q, k_cache, v_cache, acc, top, total, block_table, lengths, 1.0 / math.sqrt(D),
                                    block_table.stride(0), nchunks, H=H, HKV=HKV, D=D, P=P, G=H // HKV, ROWS=rows,
                                    T=ch10.kv_tile(), CHUNK=CHUNK, num_warps=4)
    combine_kernel[(B, HKV)](acc, top, total, out, nchunks, H=H, HKV=HKV, D=D, G=H // HKV, ROWS=rows, num_warps=4)
''',
}
EXPECT = {"cells": ["split-visible", "split-hidden", "split-speed"], "device": "cpu"}
