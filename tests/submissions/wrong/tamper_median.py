"""5a written as the naive kernel (correct, below the bar), plus a patch of the statistics: the cell
replaces `statistics.median`, which the grader's timing uses to summarise each batch of samples, with
a version that returns a quarter of the median for the first batch taken after the learner's
`matmul` ran. It must be rejected as tampering: the learner's cells replaced a statistics function."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import statistics

_real_median = statistics.median
_ran_since_last_median = [False]


def _median(data):
    value = _real_median(data)
    if _ran_since_last_median[0]:
        _ran_since_last_median[0] = False
        return value / 4
    return value


statistics.median = _median


def matmul(a, b, out):
    _ran_since_last_median[0] = True
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
