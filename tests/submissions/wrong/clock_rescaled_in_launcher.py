"""5a written as the naive kernel (correct, below the bar), plus four lines in its launcher that reach
the grader's stored CUDA-event reader (`CLOCKS.elapsed` in grader.calls.facts, an attribute of a
module-level object) and scale every interval it reads by 0.82, on the launcher's first call. Timed
from the learner's own process, the batches look 18% shorter. The grader's watch covers module-level
objects and their attributes, so the replaced reader is named after the very call that replaced it;
and the time a verdict rests on is measured by the asking process anyway. It must be rejected as
tampering on both paths."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import grader.calls.facts as _facts


def matmul(a, b, out):
    if not getattr(_facts.CLOCKS, "_scaled", False):
        _real = _facts.CLOCKS.elapsed
        _facts.CLOCKS.elapsed = lambda start, end: 0.82 * _real(start, end)
        _facts.CLOCKS._scaled = True
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "gpu"}
