"""9b's rung below: the solution's kernel with BLOCK_K = 32: four tl.dot calls per 128-block of K, each
fp32 result scaled and added into the accumulator, where the solution scales once per block. Correct
everywhere, with its products on the FP8 tensor cores; the tensor cores stop after every 32 of K for the
promotion. The rung below the 9b bar (grader/rungs.toml) and the first profile of exercise 9.P."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {
    "gemm-solution": edited(
        edited(notebook_cell(CHAPTER_DIR, "gemm-solution"), ('"BLOCK_K": 128', '"BLOCK_K": 32'), count=3),
        ("    k_groups = tl.cdiv(K, BLOCK_K)\n", "    k_groups = tl.cdiv(K, 128)\n"),
        ("    for g in range(0, k_groups):\n        left = K - g * BLOCK_K\n",
         "    for step in range(0, tl.cdiv(K, BLOCK_K)):\n        g = step * BLOCK_K // 128   # the scale block\n"
         "        left = K - step * BLOCK_K\n"),
        ("b_scale = tl.load(bs_ptr + (cols // BLOCK_K) * k_groups + g",
         "b_scale = tl.load(bs_ptr + (cols // 128) * k_groups + g")),
}
