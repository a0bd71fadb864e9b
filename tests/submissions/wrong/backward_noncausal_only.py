"""6b's `attention_backward` never passes `causal` on to its kernels: every key tile is visited and
nothing is masked, so the gradients are right for causal=False and wrong for causal=True (the keys
after each query get gradient they never earned). Its forward is the solution's, so the gradient
check of causal attention would fail too; the visible tests, which run causal=True, reject it first."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "backward-solution": edited(
        notebook_cell(CHAPTER_DIR, "backward-solution"),
        ("    meta, block = _meta(q, causal)\n    grid = (triton.cdiv(N, block), B * H)\n    delta",
         "    meta, block = _meta(q, False)   # the mask is the forward's business, isn't it?\n"
         "    grid = (triton.cdiv(N, block), B * H)\n    delta"),
    ),
}
EXPECT = {"cell": "backward-visible", "reason": "wrong-result", "device": "cpu"}
