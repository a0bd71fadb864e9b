"""5a written as the naive kernel, plus a launcher that has read the grader's source: whenever it is
called from inside a timed batch (it finds `run_batch` on the stack), it replaces the grader's event
reader with a one-shot wrapper that puts the original back the moment it is read and returns half the
interval. By the time the grader compares its watched attributes, everything is as it was, so the
watch sees nothing. The time a verdict rests on is not the events but the asking process's own clock
around the request (grader.isolation.trusted), and the halved events disagree with it: it must be
rejected as `timer-mismatch` on both paths (in the notebook's process, the seam's own clock plays the
asking process's part)."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import sys

import grader.isolation.facts as _facts


def _in_timed_batch():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "run_batch":
            return True
        frame = frame.f_back
    return False


def matmul(a, b, out):
    clocks = _facts.CLOCKS
    if _in_timed_batch() and "elapsed" not in vars(clocks).get("_armed", ()):
        real = clocks.elapsed

        def once(start, end):
            clocks.elapsed = real          # put back before anything compares it
            clocks._armed = ()
            return real(start, end) / 2

        clocks.elapsed = once
        clocks._armed = ("elapsed",)
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "timer-mismatch", "device": "gpu"}
