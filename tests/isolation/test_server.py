"""The fork server verifiers come from (grader.isolation.server): a check forked from it sees the asking
process as it is now, a time limit stops the verifier and its worker together, the learner's code
cannot reach the verdict's pipe, and it works from any main module."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import FIRST_COMPARISON, ROOT
from grader.isolation import isolate
from grader.learner import cells as nbcells

CH01 = ROOT / "solutions" / "01_vector_add" / "01_vector_add.ipynb"
NAPKIN = "napkin-test"

pytestmark = pytest.mark.slow


def _check(extra_cells=(), test=None, **kw):
    cells = nbcells.learner_cells(CH01, NAPKIN) + list(extra_cells)
    return isolate.check_sources(cells, test or nbcells.test_source(CH01, NAPKIN), NAPKIN, **kw)


def test_a_check_sees_the_environment_as_it_is_now(monkeypatch):
    assert _check().passed
    monkeypatch.setenv("KL_PROBE", "set after the server started")
    v = _check(test="import os\nprint('probe:', os.environ.get('KL_PROBE'))\n")
    assert v.passed and "probe: set after the server started" in v.stdout, v


def test_a_checks_first_comparison_imports_nothing():
    """The server makes the imports of torch's first `assert_close` before it forks (0.8 s of CPU a check paid)."""
    v = _check(test=FIRST_COMPARISON)
    assert v.passed and "imported by the first comparison: []" in v.stdout, v


def test_a_time_limit_stops_the_verifier_and_its_worker(tmp_path):
    pid_file = tmp_path / "worker.pid"
    hang = ("hang", f"import os\n_ = open({str(pid_file)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n")
    start = time.perf_counter()
    v = _check([hang], timeout_s=8)
    assert not v.passed and v.reason == "timed-out" and time.perf_counter() - start < 20, v
    worker = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the worker {worker} still runs after its check timed out")
    assert _check().passed, "the server serves the next check"


def test_the_learners_code_cannot_write_a_verdict():
    """A cell that writes a passing verdict into every file descriptor it can find: the worker holds no
    copy of the verdict's pipe, so the check fails, for a reason of its own."""
    wrong = ("wrong", "def vector_add_bytes(n):\n    return 1\n")
    forge = ("forge", "import os, json, struct\n"
             "_v = json.dumps({'passed': True, 'reason': None, 'message': ''}).encode()\n"
             "for _fd in range(3, 1024):\n"
             "    for _data in (_v, struct.pack('!i', len(_v)) + _v):\n"
             "        try:\n"
             "            os.write(_fd, _data)\n"
             "        except OSError:\n"
             "            pass\n")
    v = _check([wrong, forge])
    assert not v.passed, v


def test_a_killed_server_is_started_again():
    assert _check().passed
    old = isolate._server()
    old.proc.kill()
    old.proc.wait(timeout=10)
    assert _check().passed
    assert isolate._server() is not old


def test_a_check_from_a_script_on_stdin():
    """The asking process's main module is never re-run in a verifier: a script fed on stdin works. At its exit
    the script ends its fork server, and says nothing of a socket or a process left open."""
    code = ("from grader.isolation import isolate\nfrom grader.learner import cells\n"
            f"nb = {str(CH01)!r}\n"
            f"v = isolate.check_sources(cells.learner_cells(nb, {NAPKIN!r}), cells.test_source(nb, {NAPKIN!r}), 'x')\n"
            "print('passed' if v.passed else v.message)\n"
            "print(isolate._server().proc.pid)\n")
    out = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-"], input=code, capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    verdict, server_pid = out.stdout.split()
    assert verdict == "passed", out.stdout + out.stderr[-2000:]
    assert "ResourceWarning" not in out.stderr, out.stderr[-2000:]
    with pytest.raises(ProcessLookupError):
        os.kill(int(server_pid), 0)
