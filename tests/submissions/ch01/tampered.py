"""A student who tampers with the tests: wrong napkin math in both napkin cells, then the 1.0 test
cell deleted and the 1.1 test cell's checks replaced by `pass`. Graded on the original tests, both
napkin cells fail. The kernels are the solution's: 1 point on a CPU (the diagnosis), 13 of 15 on a GPU."""
from submissions.build import remove_tests

CHAPTER_DIR = "01_vector_add"
CELLS = {
    "napkin-solution": '''
def vector_add_bytes(n):
    return 8 * n

def floor_ms(nbytes, gbps):
    return 1.0
''',
    "fusion-napkin-solution": '''
def eager_bytes(n):
    return 36 * n

def fused_bytes(n):
    return 12 * n
''',
}


def tamper(nb: dict) -> None:
    remove_tests(nb, deleted="napkin-test", emptied="fusion-napkin-test")
