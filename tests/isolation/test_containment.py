"""Nothing a check starts outlives it (grader.processes; docs/isolation.md, "Nothing a check starts outlives
it"): a process the learner's code starts, detached (`start_new_session=True`, then a double fork) or not, is
ended when its check ends, on every path: an isolated check, fresh or in a session, one past its time limit,
one whose verifier was killed from outside; the notebook's kernel under `ladder check`; and `ladder grade`.
Each test marks its processes with a name of its own, so that tests side by side never count each other's.

The CLI tests look with `ps`, after `ladder check` and `ladder grade` have returned, for the helpers of the
exploit entry `detached_helper` (chapter 5, Triton's interpreter) and of the class student
`ch01/detached_helper`, each naming in its command line the temporary folder it started under (TMPDIR, the
test's own)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import HAS_GPU, ROOT
from grader.isolation import isolate
from grader.learner import cells as nbcells
from leftovers import marked, wait_for
from submissions import build
from submissions.build import checked_notebook
from submissions.wrong.detached_helper import MARK

CH01 = ROOT / "solutions" / "01_vector_add" / "01_vector_add.ipynb"
NAPKIN = "napkin-test"

pytestmark = pytest.mark.slow


def _daemon_cell(mark: str, then: str = "") -> tuple[str, str]:
    """A learner cell that starts a daemon (a session of its own, then a double fork) marked `mark`: assigned,
    since a worker leaves a cell's bare calls out (grader.learner.code)."""
    return ("helper", textwrap.dedent(f"""
        import subprocess, sys
        _daemon = ("import os, time\\nif os.fork():\\n    os._exit(0)\\ntime.sleep(120)\\n")
        _started = subprocess.Popen([sys.executable, "-c", _daemon, {mark!r}], start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    """) + then)


def test_a_process_listed_as_it_exits_is_not_a_stray_one_that_runs_on_is(monkeypatch):
    """A process alive when listed whose command line then reads empty was exiting (its memory freed before it became
    a zombie): not a stray once it is one. One that runs on with an empty command line still is."""
    import subprocess
    import sys

    from grader import processes
    from grader.calls import facts

    monkeypatch.setattr(processes.Proc, "command", lambda self, limit=120: "")
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    exiting = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        listed = {p.pid: p for p in processes.children(os.getpid()) if p.pid in (running.pid, exiting.pid)}
        assert len(listed) == 2, listed
        exiting.wait()   # a zombie now, as the listed process became
        assert facts._ending(listed[exiting.pid])
        assert not facts._ending(listed[running.pid])
    finally:
        running.kill()
        running.wait()


def test_a_call_that_leaves_a_process_running_is_seen_one_that_waits_for_it_is_not(mark):
    """What `stray-process` rests on, in the process that runs the call (grader.calls.facts): a process the call
    started and left, detached or not, a daemon's second half included; not one it waited for, and not torch's own
    compile workers with what runs below them."""
    import subprocess
    import sys

    from grader.calls import facts
    from grader.calls.messages import CallPolicy

    facts.start_watching()   # this process adopts what is orphaned below it, as the worker and the kernel do
    daemon = "import os, time\nif os.fork():\n    os._exit(0)\ntime.sleep(30)\n"

    started = []

    def leaves():
        started.append(subprocess.Popen([sys.executable, "-c", daemon, mark], start_new_session=True,
                                        stdout=subprocess.DEVNULL))

    def waits():
        subprocess.run([sys.executable, "-c", "pass", mark], check=True)

    def torchs():   # named as Inductor's compile worker, with a child of its own
        subprocess.Popen([sys.executable, "-c", "import os, time\nos.fork()\ntime.sleep(30)\n",
                          "x/torch/_inductor/compile_worker/__main__.py", mark], stdout=subprocess.DEVNULL)

    _, left = facts.run_call(leaves, (), {}, CallPolicy())
    assert left.stray_processes and all(mark in p or "python" in p for p in left.stray_processes), left
    # the daemon's first half has ended (after its fork): nothing more of it starts
    assert wait_for(lambda: started[0].poll() is not None)
    _, waited = facts.run_call(waits, (), {}, CallPolicy())
    assert waited.stray_processes == []
    _, torch_own = facts.run_call(torchs, (), {}, CallPolicy())
    assert torch_own.stray_processes == [], torch_own.stray_processes


def _napkin(extra, test=None, **kw) -> isolate.Verdict:
    cells = nbcells.learner_cells(CH01, NAPKIN) + list(extra)
    return isolate.check_sources(cells, test or nbcells.test_source(CH01, NAPKIN), NAPKIN, **kw)


@pytest.fixture
def mark(tmp_path):
    name = f"ladder-containment-{os.getpid()}-{tmp_path.name}"
    yield name
    for pid in marked(name):   # a failed test leaves nothing behind either: only this test's own processes
        os.kill(pid, signal.SIGKILL)


def test_a_check_of_no_notebook_run_ends_what_the_learners_cell_left_running(mark):
    v = _napkin([_daemon_cell(mark)])   # in a session used once
    assert v.passed, v
    assert not marked(mark), "a process the learner's cell started outlived its check"
    assert v.ended and all(line.startswith("pid ") for line in v.ended), v.ended


def test_a_session_ends_them_between_checks_and_keeps_its_worker(mark, tmp_path):
    sessions = isolate.CheckSessions(1)
    try:
        cells = nbcells.learner_cells(CH01, NAPKIN) + [_daemon_cell(mark)]
        first = isolate.check_sources(cells, nbcells.test_source(CH01, NAPKIN), NAPKIN, session=sessions)
        assert first.passed and first.ended, first
        assert not marked(mark), "a process the learner's cell started outlived its check in a session"
        again = isolate.check_sources(cells, "assert floor_ms(3e9, 3000) == 1.0\n", "again", session=sessions)
        assert again.passed, again
        assert sessions.started == 1, "ending the learner's processes must not end the session's worker"
    finally:
        sessions.close()


def test_a_check_past_its_time_limit_leaves_nothing_running(mark):
    v = _napkin([_daemon_cell(mark, "\nwhile True:\n    pass\n")], timeout_s=8)
    assert not v.passed and v.reason == "timed-out", v
    assert wait_for(lambda: not marked(mark), 5), "a timed-out check left the learner's process running"


def test_a_verifier_killed_from_outside_leaves_nothing_running(mark, tmp_path):
    """The fork server adopts what a dead verifier leaves (its worker, the worker's daemon) and ends it."""
    pid_file = tmp_path / "verifier.pid"
    wait = f"\nimport os\n_ = open({str(pid_file)!r}, 'w').write(str(os.getppid()))\nwhile True:\n    pass\n"
    result = {}
    checking = threading.Thread(target=lambda: result.update(v=_napkin([_daemon_cell(mark, wait)], timeout_s=60)))
    checking.start()
    assert wait_for(lambda: pid_file.is_file() and pid_file.read_text() and marked(mark), 30)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    checking.join(60)
    assert result["v"].reason == "crashed", result["v"]
    assert wait_for(lambda: not marked(mark), 10), "the dead verifier's worker tree outlived it"


def _ladder(*args: str, cwd: Path, tmp: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """The `ladder` console script (never `python -m`, which would put the folder it runs in on the import path),
    with the test's own temporary folder."""
    script = Path(sys.executable).with_name("ladder")
    assert script.is_file(), f"{script}: install the course (pip install -e .) for its console script"
    env = dict(os.environ, TMPDIR=str(tmp), LADDER_CACHE_DIR=str(tmp / "cache"))
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture
def short_tmp():
    """A temporary folder for `ladder`'s processes, short enough for the Unix sockets they open in it (a path of
    at most 107 bytes): under a pytest-xdist worker's tmp_path (".../popen-gw0/test_ladder_check_leaves_no_de0/")
    multiprocessing's socket for sharing tensors with the worker did not fit, and the worker died."""
    import tempfile

    folders = []

    def make() -> Path:
        folders.append(Path(tempfile.mkdtemp(prefix="ladder-helpers-")))
        return folders[-1]

    yield make
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _helpers_of(tmp: Path) -> list[str]:
    """`ps`'s lines for the detached helpers started under `tmp`."""
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if MARK in line and str(tmp) in line and " Z" not in line]


def _end_helpers_of(tmp: Path) -> None:
    for line in _helpers_of(tmp):
        os.kill(int(line.split()[0]), signal.SIGKILL)


@pytest.mark.parametrize("isolated", [False, True], ids=["in-kernel", "isolated"])
def test_ladder_check_leaves_no_detached_helper_behind(isolated, tmp_path, short_tmp):
    """`ladder check` of the exploit entry whose launcher starts a detached helper (Triton's interpreter): the
    cell fails as stray-process, the helper is ended, and `ps` finds none once `ladder check` has returned."""
    tmp = short_tmp()
    nb = checked_notebook("wrong", "detached_helper", ["matmul-visible"], tmp_path / "detached_helper.ipynb")
    try:
        proc = _ladder("check", *(["--isolated"] if isolated else []), str(nb), cwd=ROOT, tmp=tmp)
        assert "[stray-process]" in proc.stdout, proc.stdout + proc.stderr
        assert "process(es) running, ended" in proc.stdout, proc.stdout
        assert not _helpers_of(tmp), _helpers_of(tmp)
    finally:
        _end_helpers_of(tmp)


def test_ladder_grade_and_check_leave_no_helper_of_a_students_cell_behind(tmp_path, short_tmp):
    """A chapter-1 student whose napkin cell starts a detached helper each time it runs (in the notebook's kernel
    and in every check's worker): graded with `ladder grade` (isolated) and checked with `ladder check` (in the
    kernel), the student keeps the solution's grade and `ps` finds no helper after either returns. Without a GPU
    both say the solution's points as checked points and points that need a GPU, never a failure. About 65 s on a
    2-core machine: a whole `ladder grade` (nbgrader's course, a kernel, the checks) and a whole `ladder check`,
    the one test that runs both on a notebook whose cell leaves processes behind."""
    import csv

    tmp = short_tmp()
    nb = build.build("ch01", "01_vector_add", "detached_helper", tmp_path / "submissions" / "ada.ipynb")
    try:
        graded = _ladder("grade", str(nb.parent), "--assignment", "01_vector_add", "--workspace",
                         str(tmp_path / "ws"), "--no-progress", cwd=ROOT, tmp=tmp)
        assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
        assert not _helpers_of(tmp), ("after ladder grade", _helpers_of(tmp))
        checked = _ladder("check", str(nb), cwd=ROOT, tmp=tmp)
        assert "napkin-test" in checked.stdout and "process(es) running, ended" in checked.stdout, checked.stdout
        assert not _helpers_of(tmp), ("after ladder check", _helpers_of(tmp))
    finally:
        _end_helpers_of(tmp)
    with open(tmp_path / "ws" / "grades.csv") as fh:
        (row,) = list(csv.DictReader(fh))
    if HAS_GPU:
        assert checked.returncode == 0 and "score 15/15  PASS" in checked.stdout, checked.stdout
        assert (row["score"], row["reason_message"], row["lost_points"]) == ("15.0", "", "0")
    else:
        said = "3/3 checked points; 12 points need a GPU"
        assert checked.returncode == 0 and f"score 3/15: {said} (not checked here, not lost)" in checked.stdout, \
            checked.stdout
        assert f"3/15         " in graded.stdout and f"({said})" in graded.stdout, graded.stdout
        assert (row["score"], row["reason"], row["reason_message"]) == ("3.0", "graded", said), row
        assert (row["lost_points"], row["not_checked_points"], row["not_checked_why"]) == (
            "0", "12", "12 points need a GPU"), row


def test_a_torch_py_in_the_notebooks_folder_is_never_imported_by_the_grader(tmp_path):
    """`ladder check --isolated` run in the notebook's own folder, where the entry's cell writes `torch.py` and
    `triton.py` before the first check starts the fork server: no grader process imports them (each would note
    its importer in shadow-imports.txt), and the scaled product is judged as it is. About 20 s: a `ladder check`
    process of its own, since the fork server must start in the notebook's folder."""
    folder = tmp_path / "nb"
    nb = checked_notebook("wrong", "shadow_torch_module", ["matmul-visible"], folder / "shadow.ipynb")
    proc = _ladder("check", "--isolated", nb.name, cwd=folder, tmp=tmp_path)
    assert (folder / "torch.py").is_file(), proc.stdout + proc.stderr
    assert not (folder / "shadow-imports.txt").exists(), (folder / "shadow-imports.txt").read_text()
    assert "[wrong-result]" in proc.stdout, proc.stdout + proc.stderr
