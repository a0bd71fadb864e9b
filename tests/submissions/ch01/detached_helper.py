"""A student whose napkin-math cell, when it runs, starts a helper that leaves it behind twice over
(`subprocess.Popen(..., start_new_session=True)`, then a double fork: a daemon that is nobody's child) and
sleeps. The cell waits for the helper's first half to exit, so the daemon exists before the cell ends (forked
during a later check's call, on a busy machine, it was that call's process). Every answer is the solution's, so the grade is the solution's (15 on a GPU, 3 on a CPU). The cell runs
in the notebook's kernel and again in every check's worker (a solution cell), so each of them starts a helper;
none may outlive its check, and none may be running once `ladder grade` or `ladder check` returns
(tests/isolation/test_containment.py looks with `ps`). The helper's command line names it and the temporary
folder it started under; it ends itself after ten minutes, so that a grader that lets it go leaves nothing for
good."""
from submissions.wrong import notebook_cell
from submissions.wrong.detached_helper import HELPER, MARK

CHAPTER_DIR = "01_vector_add"
CELLS = {
    "napkin-solution": notebook_cell(CHAPTER_DIR, "napkin-solution") + f'''

import subprocess
import sys
import tempfile

_helper = subprocess.Popen([sys.executable, "-c", {HELPER!r}, "{MARK}", tempfile.gettempdir()],
                           start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
_helper.wait(timeout=60)   # its first half exits once the daemon is forked: the daemon runs before the cell ends
''',
}
