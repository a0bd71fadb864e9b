"""A student who tampers with the tests: napkin math that forgets the add (M*N*K FLOPs) and a grouped
order that is plain row-major, then the 5.0 test cell deleted and the 5.1 test cell's check replaced
by `pass`. Graded on the original tests, both cells fail. The kernels are the solution's: 13 of 15 on
a GPU."""
from submissions.build import remove_tests
from submissions.ch05.wrong import CELLS as _WRONG

CHAPTER_DIR = "05_triton_matmul"
CELLS = {gid: _WRONG[gid] for gid in ("napkin-solution", "grouped-solution")}   # wrong.py's two mistakes


def tamper(nb: dict) -> None:
    remove_tests(nb, deleted="napkin-test", emptied="grouped-test")
