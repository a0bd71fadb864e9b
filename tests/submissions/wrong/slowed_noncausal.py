"""Exercise 6 without causal skipping (chapter 6's `no_skip` kernel: every key tile is visited, the
ones above the diagonal only masked), plus a deliberate slowdown of the causal=False path: there the
key loop runs to 2N, and the extra tiles are loaded as zeros and masked out. The result stays right
and the kernel stays well above the attention speed bar, but the non-causal launch now takes about
twice as long, so causal=True looks faster than causal=False against the learner's own baseline
(6-causal's bar) without skipping anything. It must be rejected by the causal speed cell on a GPU,
which counts the tensor-core work of one causal launch (grader.cuda.tccount): 100% of the N x N product,
where skipping does about half. On a CPU the causal speed cell cannot run at all."""
from submissions.ch06.no_skip import CELLS as _NO_SKIP
from submissions.wrong import edited

CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "attention-solution": edited(
        _NO_SKIP["attention-solution"],
        ("for start_n in range(0, N, BLOCK_N):  # every tile, also those after the diagonal",
         "for start_n in range(0, N if CAUSAL else 2 * N, BLOCK_N):  # causal: every tile; not: twice as many"),
    ),
}
EXPECT = {"cell": "causal-speed", "reason": "not-skipped", "device": "gpu"}
