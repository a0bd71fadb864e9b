"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the napkin math, the PyTorch
exercise, the correctness cells of 6 and 6b, 6b's gradient check and the diagnosis (13 of 22 points; speed
and memory need a GPU)."""
CHAPTER_DIR = "06_flash_attention"
CELLS: dict = {}
