"""worker_killer, on the first attempt only: the marker it leaves in the folder LADDER_TEST_KILL_ONCE
stops it the second time, as a worker that died once on a bad machine. Graded again, it scores as the
correct student does."""
from submissions.ch01.worker_killer import NAPKIN

CHAPTER_DIR = "01_vector_add"
CELLS = {"fusion-napkin-solution": NAPKIN + '''
import os, signal
_marker = os.path.join(os.environ["LADDER_TEST_KILL_ONCE"], "killed")
if not os.path.exists(_marker):
    open(_marker, "w").close()
    os.kill(os.getppid(), signal.SIGKILL)
'''}
