"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, every correctness cell and
the two napkin cells (10 of 14), the speed cells failing with "no GPU: speed not measured"."""
CHAPTER_DIR = "05_triton_matmul"
CELLS: dict = {}
