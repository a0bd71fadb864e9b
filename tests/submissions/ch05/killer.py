"""A student whose kernel dies in 5.0: the napkin-math cell defines its three functions correctly and
then ends the notebook's process (`os._exit(1)`, as a segfault or the out-of-memory killer would).
Only that exercise's test is lost: `napkin-test` scores 0 (the functions died with the kernel, and its
output says so), while every other cell is graded as usual in a fresh kernel: 14 of 15 on a GPU."""
from submissions.ch05 import notebook_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "napkin-solution": notebook_cell("napkin-solution") + "\n\nimport os\nos._exit(1)\n",
}
