"""5a written as the naive kernel (correct, below the bar), plus a patch of the grader itself: the cell
imports `grader.harness.timing` and wraps its `compare` so that the learner's round times come back divided by
four. In the notebook's own process the naive kernel then clears the bar. It must be rejected as
tampering: the learner's cells replaced a function of the grader."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import grader.harness.timing

_real_compare = grader.harness.timing.compare


def _compare(candidate, baseline, **kwargs):
    result = _real_compare(candidate, baseline, **kwargs)
    result.candidate.rounds_ms = [t / 4 for t in result.candidate.rounds_ms]  # the candidate is mine
    return result


grader.harness.timing.compare = _compare


def matmul(a, b, out):
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
