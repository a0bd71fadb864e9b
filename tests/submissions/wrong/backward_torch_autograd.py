"""6b's `attention_backward` launches its delta kernel, then lets torch autograd differentiate torch's
attention on q, k and v, and copies the three gradients into dq, dk, dv with a Triton copy kernel of
its own. The values are right and the learner's kernels write every element of the outputs, so the
no-op probe alone would pass it. It must be rejected because torch computed the gradients on the
grader's tensors (aten::bmm, aten::_softmax_backward_data ...): only the learner's kernels may compute."""
from submissions.wrong import TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = "06_flash_attention"
_SOLUTION = notebook_cell(CHAPTER_DIR, "backward-solution")
_TAIL = _SOLUTION[_SOLUTION.index("\n\nclass FlashAttention("):]
CELLS = {
    "backward-solution": _SOLUTION[:_SOLUTION.index("\ndef attention_backward(")] + TRITON_COPY_KERNEL + '''


def attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal):
    B, H, N, D = q.shape
    meta, block = _meta(q, causal)
    delta = torch.empty_like(lse)
    attention_bwd_delta_kernel[(triton.cdiv(N, block), B * H)](out, dout, delta, N, BLOCK_M=block, D=D,
                                                               ACC=meta["ACC"])
    with torch.enable_grad():
        leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
        o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
        grads = torch.autograd.grad(o, leaves, dout.float())
    for grad, dst in zip(grads, (dq, dk, dv)):
        src = grad.to(dst.dtype).contiguous()
        copy_kernel[(triton.cdiv(src.numel(), 1024),)](src, dst, src.numel(), BLOCK=1024)
''' + _TAIL,
}
EXPECT = {"cell": "backward-visible", "reason": "library-compute", "device": "cpu"}
