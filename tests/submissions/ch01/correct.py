"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the napkin-math points only."""
CHAPTER_DIR = "01_vector_add"
CELLS: dict = {}
