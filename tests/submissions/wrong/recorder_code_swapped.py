"""5a's launcher computes with `torch.mm` into a temporary and copies it into `out` with its own Triton
kernel (as `library_compute` does), and its cell blinds the two recorders that would see it without
replacing either: it swaps the code inside `grader.calls.facts._touches` (the torch-op recorder's
test "does this op touch the grader's tensors?") and inside `grader.calls.foreign.foreign_kernels`
(the device trace's "which kernels are not yours?") for code that always answers "no" and "none".
Both functions keep their identity, which is all the grader's watch once compared. It now compares
every watched function's code object too: rejected as tampering on both paths, before any call."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + TRITON_COPY_KERNEL + '''

import grader.calls.facts as _facts
import grader.calls.foreign as _foreign


def _never(storages, values):
    return False


def _none(device, own):
    return []


_facts._touches.__code__ = _never.__code__
_foreign.foreign_kernels.__code__ = _none.__code__


def matmul(a, b, out):
    product = torch.mm(a, b)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](product, out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "tampered", "device": "cpu"}
