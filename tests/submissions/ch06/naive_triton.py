"""Attention in Triton the naive way: one kernel writes every score to an fp32 (B, H, N, N) tensor,
one normalises each row in place, one multiplies by V. Correct, so the correctness cells pass; but
its extra memory is 4 B H N^2 bytes, which must fail the memory cell, and its time is set by the
traffic of that tensor, which must fail the speed cell ("below the bar")."""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": r'''
import math

import triton
import triton.language as tl


@triton.jit
def scores_kernel(Q, K, S, N, scale, D: tl.constexpr, BLOCK: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(2).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * N * D + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)
    k_t = tl.load(K + bh * N * D + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < N, other=0.0)
    s = tl.dot(q, k_t) * scale
    if CAUSAL:
        s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
    tl.store(S + bh * N * N + offs_m[:, None] * N + offs_n[None, :], s,
             mask=(offs_m[:, None] < N) & (offs_n[None, :] < N))


@triton.jit
def softmax_rows_kernel(S, N, BLOCK: tl.constexpr):
    row = S + tl.program_id(0).to(tl.int64) * N
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(row + offs, mask=offs < N, other=float("-inf")))
    row_max = tl.max(m, 0)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        total += tl.exp(tl.load(row + offs, mask=offs < N, other=float("-inf")) - row_max)
    row_sum = tl.sum(total, 0)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row + offs, mask=offs < N, other=float("-inf"))
        tl.store(row + offs, tl.exp(x - row_max) / row_sum, mask=offs < N)


@triton.jit
def pv_kernel(P, V, O, N, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, N, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        p = tl.load(P + bh * N * N + offs_m[:, None] * N + offs_n[None, :],
                    mask=(offs_m[:, None] < N) & (offs_n[None, :] < N), other=0.0)
        v = tl.load(V + bh * N * D + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
    tl.store(O + bh * N * D + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.float16), mask=offs_m[:, None] < N)


def attention(q, k, v, out, causal):
    B, H, N, D = q.shape
    s = torch.empty((B, H, N, N), device=q.device, dtype=torch.float32)  # every score, in memory
    scores_kernel[(triton.cdiv(N, 64), triton.cdiv(N, 64), B * H)](q, k, s, N, 1.0 / math.sqrt(D),
                                                                    D=D, BLOCK=64, CAUSAL=causal)
    softmax_rows_kernel[(B * H * N,)](s, N, BLOCK=1024)
    pv_kernel[(triton.cdiv(N, 64), B * H)](s, v, out, N, D=D, BLOCK_M=64, BLOCK_N=64)
''',
}
