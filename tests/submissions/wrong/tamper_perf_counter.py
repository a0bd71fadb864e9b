"""5a written as the naive kernel (correct, below the bar), plus a patch of the host clock: the cell
replaces `time.perf_counter` with a clock that leaves out the time spent inside the learner's
`matmul` (which synchronizes before returning, so the GPU work falls inside), so any host-timed
interval around it looks nearly free. It must be rejected as tampering: the learner's cells replaced
a clock function."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import time

_real_perf_counter = time.perf_counter
_hidden_s = [0.0]


def _perf_counter():
    return _real_perf_counter() - _hidden_s[0]


time.perf_counter = _perf_counter


def matmul(a, b, out):
    start = _real_perf_counter()
    naive_matmul(a, b, out)
    if out.is_cuda:
        torch.cuda.synchronize()
    _hidden_s[0] += _real_perf_counter() - start
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
