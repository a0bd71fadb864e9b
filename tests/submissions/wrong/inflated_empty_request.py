"""5a written as the naive kernel (below the bar), plus a profile hook (`sys.setprofile`, which the
grader's watch does not cover) that has read how timing works: it sleeps 3 ms whenever the grader's
`run_batch` starts with zero calls, the empty request whose cost the verifier subtracts from every timed
request. Credited in full, 3 ms a request would shave a sixth off every 20 ms batch. The overhead
credited is capped by what the same request cost before any learner code ran, so the naive kernel stays
where it is: below the bar, on both paths."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import sys
import time


def _slow_the_grader(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "run_batch":
        if frame.f_locals.get("reps") == 0:
            time.sleep(0.003)


sys.setprofile(_slow_the_grader)


def matmul(a, b, out):
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "below-bar", "device": "gpu"}
