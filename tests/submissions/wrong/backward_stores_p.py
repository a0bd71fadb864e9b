"""6b's backward the way it reads on paper: one Triton kernel writes every probability P = exp(S - lse)
to a (B, H, N, N) fp16 tensor, and the dK/dV and dQ kernels read their tiles of P from it instead of
recomputing them. Right values (P rounded to fp16 is well inside the tolerance), only the learner's
kernels run; but the extra memory is 2 B H N^2 bytes (1 GiB at B=1 H=8 N=8192), which the O(N) memory
check must reject. On a CPU the memory cell cannot measure anything. It is also the rung below the
solution in assets/results/calibration/top-rungs/ch06_gpu.py."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "06_flash_attention"
_PROBS = '''

@triton.jit
def attention_probs_kernel(Q, K, LSE, P, N, qk_scale, D: tl.constexpr, BLOCK: tl.constexpr,
                           CAUSAL: tl.constexpr, ACC: tl.constexpr):
    """P[bh, i, j] = exp(s_ij - lse_i) for one BLOCK x BLOCK tile, 0 where masked."""
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    bh = tl.program_id(2).to(tl.int64)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * N * D + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)
    k_t = tl.load(K + bh * N * D + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < N, other=0.0)
    lse = tl.load(LSE + bh * N + offs_m, mask=offs_m < N, other=0.0) * 1.4426950408889634
    s = tl.dot(q, k_t, out_dtype=ACC) * qk_scale
    visible = (offs_m[:, None] < N) & (offs_n[None, :] < N)
    if CAUSAL:
        visible = visible & (offs_n[None, :] <= offs_m[:, None])
    p = tl.exp2(tl.where(visible, s - lse[:, None], float("-inf")))
    tl.store(P + bh * N * N + offs_m[:, None] * N + offs_n[None, :], p.to(P.dtype.element_ty),
             mask=(offs_m[:, None] < N) & (offs_n[None, :] < N))

'''
CELLS = {
    "backward-solution": edited(
        notebook_cell(CHAPTER_DIR, "backward-solution"),
        ("def attention_bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, N,",
         "def attention_bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, P, N,"),
        ("        s_t = tl.dot(k, q_t, out_dtype=ACC) * qk_scale            # S transposed: keys x queries\n",
         ""),
        ("        p_t = tl.exp2(tl.where(visible, s_t - lse[None, :], float(\"-inf\")))   # P^T, recomputed\n",
         "        p_t = tl.load(P + bh * N * N + offs_m[None, :] * N + offs_n[:, None], mask=visible, other=0.0).to(ACC)\n"),
        ("def attention_bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, N,",
         "def attention_bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, P, N,"),
        ("        s = tl.dot(q, k_t, out_dtype=ACC) * qk_scale\n", ""),
        ("        p = tl.exp2(tl.where(visible, s - lse[:, None], float(\"-inf\")))\n",
         "        p = tl.load(P + bh * N * N + offs_m[:, None] * N + offs_n[None, :], mask=visible, other=0.0).to(ACC)\n"),
        ("\n\ndef _meta(q, causal):", _PROBS + "\ndef _meta(q, causal):"),
        ("    sm_scale = 1.0 / math.sqrt(D)\n    args = (N, sm_scale * LOG2E, sm_scale)\n",
         "    sm_scale = 1.0 / math.sqrt(D)\n"
         "    probs = torch.empty((B, H, N, N), device=q.device, dtype=q.dtype)   # every probability, stored\n"
         "    attention_probs_kernel[(triton.cdiv(N, block), triton.cdiv(N, block), B * H)](\n"
         "        q, k, lse, probs, N, sm_scale * LOG2E, D=D, BLOCK=block, CAUSAL=causal, ACC=meta[\"ACC\"])\n"
         "    args = (probs, N, sm_scale * LOG2E, sm_scale)\n"),
    ),
}
EXPECT = {"cell": "backward-memory", "reason": "memory", "device": "gpu"}
