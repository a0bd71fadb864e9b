"""9b's kernel converts its e4m3 tiles to fp16 before tl.dot: every e4m3 value is exact in fp16, so its results
are right, and on a GPU it runs at the fp16 tensor cores' rate, half the FP8 rate, which could still clear a bar
set on a slow baseline. It must be rejected by the FP8 tensor-core count: its multiply-adds ran on 16-bit
operands (counted by instrumented copies on a GPU, by the interpreter's tl.dot on a CPU). The same cells as
chapter 9's rung fp16_mma_9b (tests/submissions/ch09), which grader/rungs.toml times for the record."""
from submissions.ch09.fp16_mma_9b import CELLS

CHAPTER_DIR = "09_low_precision"
EXPECT = {"cell": "gemm-fp8", "reason": "no-fp8-tensor-cores", "device": "cpu", "message": "only 0 of them on fp8 operands"}
