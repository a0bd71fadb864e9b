"""5a written as the naive kernel, plus a cell that replaces the grader's whole clock object
(`grader.calls.facts.CLOCKS`) with one of its own, whose event reader halves every interval and
whose host clock runs at half speed. Nothing of torch or `time` is touched, and the object has every
attribute the grader reads. It must be rejected as tampering on both paths, before any timing: the
watch notes the identity of every module-level object of the grader."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import time

import grader.calls.facts as _facts


class _HalfClocks:
    def __init__(self, real):
        self.real = real
        self.event, self.record, self.cuda_sync = real.event, real.record, real.cuda_sync
        self.perf_counter = lambda: time.perf_counter() / 2

    def elapsed(self, start, end):
        return self.real.elapsed(start, end) / 2

    def sync(self):
        self.real.sync()


_facts.CLOCKS = _HalfClocks(_facts.CLOCKS)


def matmul(a, b, out):
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
