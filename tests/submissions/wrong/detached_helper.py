"""5a's launcher is the solution's, and its first call starts a helper that leaves it behind twice over:
`subprocess.Popen(..., start_new_session=True)` puts the helper outside the process group a time limit
kills, and the helper forks again and lets its first half exit, so that the second (a daemon) is nobody's
child. Here the helper only sleeps; its GPU twin (`detached_gpu_load`) loads the GPU whenever the launcher is
idle, so that torch's side of a speed check runs beside it. Left running, such a helper outlives the check,
and in class grading it runs beside the next student's. It must be rejected because the call returned while a
process it started was still running (the process that ran the call adopts what is orphaned below it, so the
daemon counts too), and it must not outlive the check: tests/isolation/test_containment.py looks for it with
`ps` after `ladder check` and `ladder grade` return. The helper's command line names it and the temporary
folder it started under; it ends itself after ten minutes, so that a grader that lets it go leaves nothing for
good."""
from submissions.wrong import CH05, edited, notebook_cell

# The helper: fork, the first half exits, the second sleeps. argv: its name, then the temporary folder.
HELPER = '''
import os, time
if os.fork():
    os._exit(0)
deadline = time.time() + 600
while time.time() < deadline:
    time.sleep(0.2)
'''
MARK = "kernel-ladder-detached-helper"

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", f'''
import subprocess
import sys
import tempfile

_HELPER = {HELPER!r}
_helpers = []


def matmul(a, b, out):'''),
        ('    M, K = a.shape\n', f'''    if not _helpers:   # outside the grader's process group, and parentless
        _helpers.append(subprocess.Popen([sys.executable, "-c", _HELPER, "{MARK}", tempfile.gettempdir()],
                                         start_new_session=True, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    M, K = a.shape
''')),
}
EXPECT = {"cell": "matmul-visible", "reason": "stray-process", "device": "cpu"}
