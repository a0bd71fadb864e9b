"""A student with four mistakes: attention_flops counts one matmul instead of two; tiled_attention
exponentiates without the running max (NaN on the shifted rows); the kernel forgets to rescale
its accumulator when the max grows; and the backward (6b) leaves delta out of dS = P (dP - delta).
Every graded cell fails but the diagnosis, which is the solution's: 1 of 22, on a CPU as on a GPU."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "backward-solution": edited(
        notebook_cell(CHAPTER_DIR, "backward-solution"),
        ("        ds_t = p_t * (dp_t - delta[None, :])\n", "        ds_t = p_t * dp_t\n"),
        ("        ds = p * (tl.dot(do, v_t, out_dtype=ACC) - delta[:, None])\n",
         "        ds = p * tl.dot(do, v_t, out_dtype=ACC)\n"),
    ),
    "napkin-solution": '''
def score_bytes(B, H, N, bytes_per_element):
    return B * H * N * N * bytes_per_element


def attention_flops(B, H, N, D):
    return B * H * 2 * N * N * D
''',
    "tiled-solution": '''
def tiled_attention(q, k, v, block_n):
    n, d = q.shape
    l = torch.zeros(n, dtype=q.dtype)
    acc = torch.zeros(n, d, dtype=q.dtype)
    for j in range(0, k.shape[0], block_n):
        p = torch.exp(q @ k[j:j + block_n].T / d ** 0.5)
        l = l + p.sum(dim=1)
        acc = acc + p @ v[j:j + block_n]
    return acc / l[:, None]
''',
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
    end = N
    if CAUSAL:
        end = tl.minimum(start_m + BLOCK_M, N)
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = tl.load(K + head + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < N, other=0.0)
        v = tl.load(V + head + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        s = tl.dot(q, k_t) * qk_scale
        visible = offs_n[None, :] < N
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v, acc)  # the bug: acc is not rescaled by exp2(m_i - m_new)
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
