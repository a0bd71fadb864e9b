"""9b with its tiles converted to fp16 before tl.dot: the same numbers (every e4m3 value is exact in fp16),
multiplied on the fp16 tensor cores, at half the FP8 rate. Correct; refused by the FP8 tensor-core count
(`no-fp8-tensor-cores`) on every GPU and in the interpreter; timed for the record (grader/rungs.toml)."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {
    "gemm-solution": edited(notebook_cell(CHAPTER_DIR, "gemm-solution"),
                            ("acc += tl.dot(a, b) *", "acc += tl.dot(a.to(tl.float16), b.to(tl.float16)) *")),
}
