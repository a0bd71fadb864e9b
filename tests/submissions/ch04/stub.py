"""The released notebook, untouched: every graded cell fails with "not written yet"."""
CHAPTER_DIR = "04_tensor_cores"
STUB = True
CELLS: dict = {}
