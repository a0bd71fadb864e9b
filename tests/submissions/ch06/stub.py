"""The released notebook, untouched: every graded cell fails with "not written yet", on a CPU too."""
CHAPTER_DIR = "06_flash_attention"
STUB = True
CELLS: dict = {}
