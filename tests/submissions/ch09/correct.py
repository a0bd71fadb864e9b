"""The instructor's solution, unchanged: full marks on a GPU with FP8 (on an NVIDIA H200, with the bars calibrated
there, every cell it could check gave its points: assets/results/calibration/ch09-h200); on a CPU every correctness cell, the FP8 count, 9.0, 9.2
and 9.P through Triton's interpreter and the recorded profiles, the speed cells failing with "no GPU: speed not
measured"."""
CHAPTER_DIR = "09_low_precision"
CELLS: dict = {}
