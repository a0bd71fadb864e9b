"""5a written as the naive kernel, plus a launcher that has read the grader's source: whenever it is
called from inside a timed batch (it finds `run_batch` on the stack), it replaces the grader's event
reader with a one-shot wrapper that puts the original back the moment it is read and returns half the
interval. By the time the grader compares its watched attributes after the batch, everything is as it
was. The batch checks that the reader is the grader's own at the moment it reads the batch's time, so
it must be rejected as tampering on both paths."""
from submissions.wrong import FIND_TIMED_BATCH, ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell(FIND_TIMED_BATCH + '''

import grader.calls.facts as _facts


def matmul(a, b, out):
    clocks = _facts.CLOCKS
    if _timed_batch() is not None and "elapsed" not in vars(clocks).get("_armed", ()):
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
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "gpu"}
