"""5a written as the naive kernel (below the bar), plus a launcher that sleeps 30 ms whenever it is the
only call of a timed batch (it reads `reps` from the grader's `run_batch` on the stack): the call that
sizes the batches. Sized from a 31 ms call, every batch would hold one call, and a request's fixed cost
would be most of what is measured. A batch far shorter than its target is sized again from its own
calls before its time counts, so the naive kernel is timed as it is: below the bar, on both paths."""
from submissions.wrong import FIND_TIMED_BATCH, ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell(FIND_TIMED_BATCH + '''
import time


def matmul(a, b, out):
    frame = _timed_batch()
    if frame is not None and frame.f_locals.get("reps") == 1:
        time.sleep(0.030)   # the sizing call: look slow
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "below-bar", "device": "gpu"}
