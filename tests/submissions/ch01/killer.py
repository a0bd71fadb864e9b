"""A student whose kernel dies: the fusion napkin-math cell defines both functions correctly and then
ends the kernel process (`os._exit(1)`, as a segfault or the out-of-memory killer would). Only that
cell's test is lost: `fusion-napkin-test` scores 0 (the functions died with the kernel, and its
output says so), while every other cell is graded as usual in a fresh kernel: 1 point on a CPU
(napkin math 1.0), 14 of 15 on a GPU."""
CHAPTER_DIR = "01_vector_add"
CELLS = {
    "fusion-napkin-solution": '''
def eager_bytes(n):
    # mul reads a and x and writes a temporary, add reads it and b and writes another,
    # relu reads that and writes y: 8 float32 arrays of n elements in all.
    return (3 + 3 + 2) * 4 * n

def fused_bytes(n):
    # one pass: read a, x and b, write y.
    return 4 * 4 * n

import os
os._exit(1)
''',
}
