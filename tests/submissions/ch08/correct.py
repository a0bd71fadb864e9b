"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, exercise 8a and the block's
correctness cells (8 of 10 points; the block's speed needs a GPU)."""
CHAPTER_DIR = "08_should_you_write_it"
CELLS: dict = {}
