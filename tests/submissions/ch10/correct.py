"""The instructor's solution, unchanged: full marks on a GPU; on a CPU, the napkin math, the diagnosis and the
correctness cells of 10a and 10b through Triton's interpreter (9 of 13), the speed cells failing with "no GPU: speed
not measured"."""
CHAPTER_DIR = "10_decode_attention"
CELLS: dict = {}
