"""The released notebook, untouched: every graded cell fails with "not written yet"."""
CHAPTER_DIR = "05_triton_matmul"
STUB = True
CELLS: dict = {}
