"""A flash kernel that masks the causal triangle but still visits every key tile: correct, fast
enough against naive torch, O(N) memory, so every cell passes except the causal speed cell, which
must fail ("below the bar": causal=True takes as long as causal=False)."""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": r'''
import math

import triton
import triton.language as tl


@triton.jit
def flash_attention_kernel(Q, K, V, O, N, qk_scale,
                           D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * N * D
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + head + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start_n in range(0, N, BLOCK_N):  # every tile, also those after the diagonal
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = tl.load(K + head + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < N, other=0.0)
        v = tl.load(V + head + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        s = tl.dot(q, k_t) * qk_scale
        visible = offs_n[None, :] < N
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(O + head + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=offs_m[:, None] < N)


def attention(q, k, v, out, causal):
    B, H, N, D = q.shape
    grid = (triton.cdiv(N, 128), B * H)
    flash_attention_kernel[grid](q, k, v, out, N, math.log2(math.e) / math.sqrt(D), D=D, BLOCK_M=128,
                                 BLOCK_N=64, CAUSAL=causal, num_warps=4 if D <= 64 else 8, num_stages=3)
''',
}
