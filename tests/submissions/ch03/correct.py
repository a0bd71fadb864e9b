"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the two napkin-math points only."""
CHAPTER_DIR = "03_tiling"
CELLS: dict = {}
