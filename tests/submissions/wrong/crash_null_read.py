"""5a's launcher is the solution's, plus a debugging peek through ctypes at the first element of the
result, through a raw pointer it meant to cache per shape but never stored: the lookup falls back to
0, and reading address 0 kills the process with SIGSEGV. It must be rejected as a crash of that one
check, with every other cell and notebook still graded."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", """
import ctypes

_pointers = {}  # shape -> raw address of the first result element (never filled in: the bug)


def matmul(a, b, out):"""),
        (CH05_LAUNCH, CH05_LAUNCH + """\
    first = ctypes.c_uint16.from_address(_pointers.get(tuple(out.shape), 0)).value  # debugging peek
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "crashed", "device": "cpu"}
