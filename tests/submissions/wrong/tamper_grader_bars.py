"""5a written as the naive kernel (correct, below the bar), plus a patch of the grader's state through
`import grader`: the cell wraps `grader.harness.exercise.bar_for` (the name the speed check looks bars up by)
so that every bar comes back as 0.01x. In the notebook's own process the naive kernel then passes.
It must be rejected as tampering: the learner's cells replaced a function of the grader."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import dataclasses

import grader.harness.exercise

_real_bar_for = grader.harness.exercise.bar_for


def _bar_for(key):
    return dataclasses.replace(_real_bar_for(key), bar=0.01)


grader.harness.exercise.bar_for = _bar_for


def matmul(a, b, out):
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
