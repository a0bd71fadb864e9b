"""5a's launcher "keeps more precision": it points `out` at a new float32 tensor (`out.data = ...`)
and has its kernel store the fp32 accumulator there. In the learner's own process `out` is then a
float32 tensor holding a very accurate product; in grading, the grader's fp16 tensor is never written.
It must be rejected as the wrong dtype on both paths: the facts of every call note a tensor the grader
handed over whose dtype the call changed, before any value is compared."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("    tl.store(c_ptrs, acc.to(tl.float16), mask=in_m & in_n)", "    tl.store(c_ptrs, acc, mask=in_m & in_n)"),
        (CH05_LAUNCH, "    out.data = torch.empty(out.shape, dtype=torch.float32, device=out.device)  # more precision\n"
         + CH05_LAUNCH)),
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-dtype", "device": "cpu"}
