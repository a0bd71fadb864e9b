"""10b with as many chunks as fill the GPU twice over, whatever the batch: the number of chunks is chosen so that
B x H_kv x chunks is about twice the SM count (at least one), each program walking its chunk with 10a's online softmax
in base 2 and writing its rows' normalised output and log-sum-exp; the merge is one program per (sequence, query
head) that loops over the chunks twice (the largest lse, then the weighted sum), so it needs no power-of-two padding.

Independent of the solution: chunks sized from the whole grid, not from the KV heads alone; a merge that loops
instead of loading every chunk at once; partial results laid out [chunk, sequence, head]; its own names.

Why it should pass: at 10b's size (B = 4, H_kv = 8) it asks for about 2 x 132 / 32 = 9 chunks a sequence on an H100 or
an H200: 72 programs for the long sequence, with 128 more that return at once for the short ones: fewer busy SMs than
the solution's split, so it is the thinner of the two correct submissions on speed. Speed: under 10b's starting bar of
0.40 of the copy ceiling on an H200 (assets/results/exploits/ch10-h200; the figure itself was not kept); not yet timed
against the calibrated 0.15.
"""
CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "split-solution": r'''
import math

import torch
import triton
import triton.language as tl

from grader.chapters import ch10

SMS = session.gpu.sm_count if session.has_gpu else 4


@triton.jit
def part_kernel(Q, K, V, PO, PL, TABLE, LENGTHS, c2, table_stride, span,
                B: tl.constexpr, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, P: tl.constexpr,
                G: tl.constexpr, ROWS: tl.constexpr, T: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    part = tl.program_id(2)
    n = tl.load(LENGTHS + seq)
    lo = part * span
    hi = tl.minimum(lo + span, n)
    i = tl.arange(0, ROWS)
    d = tl.arange(0, D)
    head = kvh * G + i
    q = tl.load(Q + (seq * H + head)[:, None] * D + d[None, :], mask=i[:, None] < G, other=0.0)
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for t0 in range(lo, hi, T):
        t = t0 + tl.arange(0, T)
        live = t < hi
        pg = tl.load(TABLE + seq * table_stride + t // P, mask=live, other=0)
        base = ((pg.to(tl.int64) * P + t % P) * HKV + kvh) * D
        k = tl.load(K + base[:, None] + d[None, :], mask=live[:, None], other=0.0)
        v = tl.load(V + base[:, None] + d[None, :], mask=live[:, None], other=0.0)
        s = tl.where(live[None, :], tl.dot(q, tl.trans(k)) * c2, float("-inf"))
        m2 = tl.maximum(m, tl.max(s, 1))
        a = tl.exp2(m - m2)
        p = tl.exp2(s - m2[:, None])
        l = l * a + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v, acc * a[:, None])
        m = m2
    seen = l > 0
    safe = tl.where(seen, l, 1.0)
    at = (part * B + seq) * H + head                      # [part, sequence, head]
    tl.store(PL + at, tl.where(seen, m + tl.log2(safe), float("-inf")), mask=i < G)
    tl.store(PO + at[:, None] * D + d[None, :], acc / safe[:, None], mask=i[:, None] < G)


@triton.jit
def gather_kernel(PO, PL, O, parts, BH, D: tl.constexpr):
    bh = tl.program_id(0)
    d = tl.arange(0, D)
    top = float("-inf")
    for c in range(0, parts):
        top = tl.maximum(top, tl.load(PL + c * BH + bh))
    num = tl.zeros([D], tl.float32)
    den = 0.0
    for c in range(0, parts):
        w = tl.exp2(tl.load(PL + c * BH + bh) - top)
        num += w * tl.load(PO + (c * BH + bh) * D + d)
        den += w
    tl.store(O + bh * D + d, (num / den).to(tl.float16))


def decode_attention_split(q, k_cache, v_cache, block_table, lengths, out):
    B, H, D = q.shape
    P, HKV = k_cache.shape[1], k_cache.shape[2]
    t = ch10.kv_tile()
    most = block_table.shape[1] * P
    parts = max(1, min(-(-2 * SMS // (B * HKV)), -(-most // t)))
    span = -(-(-(-most // parts)) // t) * t
    parts = -(-most // span)
    po = torch.empty((parts, B, H, D), device=q.device, dtype=torch.float32)
    pl = torch.empty((parts, B, H), device=q.device, dtype=torch.float32)
    part_kernel[(B, HKV, parts)](q, k_cache, v_cache, po, pl, block_table, lengths, 1.4426950408889634 / math.sqrt(D),
                                 block_table.stride(0), span, B=B, H=H, HKV=HKV, D=D, P=P, G=H // HKV,
                                 ROWS=ch10.group_rows(H, HKV), T=t, num_warps=4)
    gather_kernel[(B * H,)](po, pl, out, parts, B * H, D=D, num_warps=2)
''',
}
EXPECT = {"cells": ["split-visible", "split-hidden", "split-speed"], "device": "cpu"}
