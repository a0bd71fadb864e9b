"""5a written as the worked naive kernel: 32 x 32 x 32 tiles, one program per tile in row-major
order, Triton's default num_warps and num_stages, no autotuning. Correct on every shape, so it passes
5a's correctness cells; it must miss 5a's speed bar (0.75x torch.mm) every time. Everything else is
the solution (5b keeps its own fast kernel)."""
from submissions.ch05 import notebook_cell

CHAPTER_DIR = "05_triton_matmul"
_given = notebook_cell("matmul-solution")  # the configurations stay: 5b uses them
CELLS = {
    "matmul-solution": _given[:_given.index("@triton.autotune")] + notebook_cell("naive-kernel") + """

def matmul(a, b, out):
    naive_matmul(a, b, out)
""",
}
