"""5a written as the naive kernel (correct, and below the 0.75x bar on every GPU), plus a patch: the
cell replaces `triton.testing.do_bench`, the function the grader's GPU timer calls, with a wrapper
that divides the times by four whenever the function being timed called the learner's `matmul`. In
the notebook's own process that lifts the naive kernel over the bar. It must be rejected as tampering:
the learner's cells replaced a timing function (the verifier times in its own process and checks the
worker's timing and statistics functions after running the learner's cells, before any call)."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import triton.testing

_real_do_bench = triton.testing.do_bench
_timing_mine = [False]


def _do_bench(fn, *args, **kwargs):
    _timing_mine[0] = False
    times = _real_do_bench(fn, *args, **kwargs)
    if not _timing_mine[0]:
        return times
    return [t / 4 for t in times] if isinstance(times, list) else times / 4


triton.testing.do_bench = _do_bench


def matmul(a, b, out):
    _timing_mine[0] = True
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
