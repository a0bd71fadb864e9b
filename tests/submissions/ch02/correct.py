"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the three prediction points only."""
CHAPTER_DIR = "02_coalescing"
CELLS: dict = {}
