"""The GPU twin of `detached_helper`: 5a's launcher is the solution's, and when it finds itself inside a timed
batch (the grader's `run_batch` on its stack) it starts a detached helper (`start_new_session=True`, then a
double fork) that loads the GPU with 8192-square fp16 matmuls whenever the launcher is idle: the launcher
touches a file at every call, and the helper multiplies while that file is more than 2 ms old. Torch's side of
the comparison then runs beside the helper's matmuls and the learner's side mostly does not. It must be rejected
because a timed call returned while a process it started was still running, and the helper must not outlive
the check (assets/results/gpu_measure.sh's `containment` step looks for it with `ps` after `ladder check` and
after `ladder grade`). The helper ends itself after ten minutes, so that a grader that lets it go leaves nothing
for good."""
from submissions.wrong import CH05, FIND_TIMED_BATCH, edited, notebook_cell
from submissions.wrong.detached_helper import MARK

# The helper: fork, the first half exits; the second multiplies while the launcher is idle.
# argv: its name, the temporary folder, the file the launcher touches at every call.
HELPER = '''
import os, sys, time
import torch
if os.fork():
    os._exit(0)
beat = sys.argv[3]
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn_like(a)
deadline = time.time() + 600
while time.time() < deadline:
    try:
        idle = time.time() - os.stat(beat).st_mtime
    except OSError:
        break
    if idle > 0.002:
        torch.mm(a, b)
        torch.cuda.synchronize()
    else:
        time.sleep(0.0005)
'''

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", FIND_TIMED_BATCH + f'''
import os
import subprocess
import tempfile

_HELPER = {HELPER!r}
_beat = os.path.join(tempfile.mkdtemp(), "beat")
with open(_beat, "w"):   # a statement, not a bare call: the grader's worker runs it too
    pass
_helpers = []


def matmul(a, b, out):'''),
        ('    M, K = a.shape\n', f'''    os.utime(_beat)   # the launcher is busy: the helper waits
    if not _helpers and _timed_batch() is not None:
        _helpers.append(subprocess.Popen([sys.executable, "-c", _HELPER, "{MARK}", tempfile.gettempdir(), _beat],
                                         start_new_session=True, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    M, K = a.shape
''')),
}
EXPECT = {"cell": "matmul-speed", "reason": "stray-process", "device": "gpu"}
