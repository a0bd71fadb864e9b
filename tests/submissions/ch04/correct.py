"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the two napkin-math cells and
the tensor-core check (3 points)."""
CHAPTER_DIR = "04_tensor_cores"
CELLS: dict = {}
