"""A student with mistakes: napkin math counts M*N*K FLOPs (forgets the add), the grouped order is
plain row-major whatever group_m is, the 5a kernel's K loop runs K // BLOCK_K times (dropping the
last, partial chunk), and 5b adds the bias after the GELU. Every correctness cell fails, on a GPU
and on a CPU. 5a's speed cell is the exception: its timing shape, K = 4096, has no partial chunk, so
on a GPU it passes (and on a CPU it fails with "no GPU", its quick pre-check shape having K = 64).
The diagnosis is the solution's and passes everywhere."""
from submissions.ch05 import edited, notebook_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "napkin-solution": edited(notebook_cell("napkin-solution"), ("return 2 * m * n * k", "return m * n * k")),
    "grouped-solution": """
def grouped_tile(pid, grid_m, grid_n, group_m):
    return pid // grid_n, pid % grid_n
""",
    "matmul-solution": edited(notebook_cell("matmul-solution"),
                              ("for k in range(0, tl.cdiv(K, BLOCK_K)):", "for k in range(0, K // BLOCK_K):")),
    "fused-solution": edited(notebook_cell("fused-solution"),
                             ("x = acc + bias[None, :]", "x = acc"),
                             ("y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))",
                              "y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x)) + bias[None, :]")),
}
