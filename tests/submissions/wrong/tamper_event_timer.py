"""5a written as the naive kernel (correct, below the bar), plus a patch of CUDA event timing: the cell
replaces `torch.cuda.Event.record` (to remember the event recorded last) and
`torch.cuda.Event.elapsed_time` (to divide by four any interval that starts at an event recorded just
before a call of the learner's `matmul`), which is how a CUDA-event timer such as do_bench measures.
It must be rejected as tampering: the learner's cells replaced timing methods. (The patch works the
same whether or not CUDA is present; the classes exist in CPU builds of torch.)"""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
_real_record = torch.cuda.Event.record
_real_elapsed_time = torch.cuda.Event.elapsed_time
_last_recorded = [None]
_starts_of_mine = set()


def _record(self, *args, **kwargs):
    _last_recorded[0] = self
    return _real_record(self, *args, **kwargs)


def _elapsed_time(self, end_event):
    ms = _real_elapsed_time(self, end_event)
    return ms / 4 if id(self) in _starts_of_mine else ms


torch.cuda.Event.record = _record
torch.cuda.Event.elapsed_time = _elapsed_time


def matmul(a, b, out):
    if _last_recorded[0] is not None:
        _starts_of_mine.add(id(_last_recorded[0]))
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "tampered", "device": "cpu"}
