"""The naive rung of 8b: the block with chapter 5's naive matmul, 32 x 32 tiles in row-major order with
one configuration (the worked example before exercise 5a), in both `matmul` and `matmul_bias_act`. Correct,
and every kernel the learner's own; far slower than cuBLAS, so it must miss the 8b bar every time.
Everything else is the solution."""
from submissions.ch08 import edited, notebook_cell

CHAPTER_DIR = "08_should_you_write_it"
CELLS = {
    "matmul-paste": edited(
        notebook_cell("matmul-paste"),
        ('''MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
]''', '''MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}, num_warps=4, num_stages=1),
]''')),
}
