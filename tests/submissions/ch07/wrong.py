"""A student with a mistake in every exercise: the napkin math forgets the write, `combine` adds the two
sums without rescaling them, the softmax never divides by the sum, `occupancy` ignores registers, and
the norm divides the sum of squares by BLOCK (the padded width) instead of `hidden`, which is right
only when hidden is a power of two. Every graded cell fails; on a CPU the 7a cells say "no GPU"."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"
CELLS = {
    "napkin-solution": edited(notebook_cell(CHAPTER_DIR, "napkin-solution"),
                              ("return 2 * 4 * rows * cols", "return 4 * rows * cols")),
    "combine-solution": edited(notebook_cell(CHAPTER_DIR, "combine-solution"),
                               ("return m, s1 * math.exp(m1 - m) + s2 * math.exp(m2 - m)", "return m, s1 + s2")),
    "softmax-solution": edited(notebook_cell(CHAPTER_DIR, "softmax-solution"),
                               ("yr[j] = __expf(xr[j] - m) * inv;", "yr[j] = __expf(xr[j] - m);"),
                               ("y4[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv,\n"
                                "                                __expf(v.z - m) * inv, __expf(v.w - m) * inv);",
                                "y4[j] = make_float4(__expf(v.x - m), __expf(v.y - m), __expf(v.z - m), __expf(v.w - m));")),
    "occupancy-solution": edited(notebook_cell(CHAPTER_DIR, "occupancy-solution"),
                                 ("    if registers:\n", "    if False:\n")),
    "norm-solution": edited(notebook_cell(CHAPTER_DIR, "norm-solution"),
                            ("tl.sum(r * r, axis=0) / hidden + eps", "tl.sum(r * r, axis=0) / BLOCK + eps")),
}
