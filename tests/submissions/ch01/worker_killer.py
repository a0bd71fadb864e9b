"""A student whose notebook kills the process that grades it: the fusion napkin-math cell sends SIGKILL
to its kernel's parent, which under `ladder grade --workers N` is a Dask worker, on every attempt, until
Dask stops re-queueing the student (tests/grading/test_class_dask.py). worker_killer_once does it once."""
CHAPTER_DIR = "01_vector_add"
NAPKIN = '''
def eager_bytes(n):
    return (3 + 3 + 2) * 4 * n

def fused_bytes(n):
    return 4 * 4 * n
'''
CELLS = {"fusion-napkin-solution": NAPKIN + '''
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
'''}
