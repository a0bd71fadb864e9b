"""worker_killer, on the first attempt only: the marker it leaves in the folder LADDER_TEST_KILL_ONCE
stops it the second time, as a worker that died once on a bad machine. Graded again, it scores as the
correct student does."""
from submissions.ch01.worker_killer import NAPKIN

CHAPTER_DIR = "01_vector_add"
CELLS = {"fusion-napkin-solution": NAPKIN + '''
import os, signal
_marker = os.path.join(os.environ["LADDER_TEST_KILL_ONCE"], "killed")
try:   # created or found in one step: two processes running this cell at once kill one worker, not two
    os.close(os.open(_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except FileExistsError:
    pass
else:
    os.kill(os.getppid(), signal.SIGKILL)
'''}
