"""5a exactly as the solution but with GROUP_M = 1 in every configuration: large tiles, autotuned,
in plain row-major order. For the calibration table: what the grouped order buys on its own."""
from submissions.ch05 import edited, notebook_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {"matmul-solution": edited(notebook_cell("matmul-solution"), ('"GROUP_M": 8', '"GROUP_M": 1'))}
