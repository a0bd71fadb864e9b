"""A notebook run's checks in one session (grader.isolation.isolate.CheckSession): one verifier and one worker
check them in turn, the worker runs each learner cell once, and whatever a fresh pair would refuse or stop, a
session does too, then hands the next check to a new pair."""

from __future__ import annotations

import pytest

from grader.isolation import isolate
from grader.learner.code import KernelOutcome

pytestmark = pytest.mark.slow


def _cells(mark):
    """Two learner cells; each appends its name to the file `mark` when it runs."""
    write = f"_ = open({str(mark)!r}, 'a').write"
    return [("one", f"import os\n{write}('one\\n')\ndef pid():\n    return os.getpid()\n"),
            ("two", f"{write}('two\\n')\ndef square(x):\n    return x * x\n")]


PID = "print('worker', pid())\n"


def _worker_pid(verdict) -> int:
    assert verdict.passed, verdict.message
    return int(verdict.stdout.split("worker", 1)[1].split()[0])


@pytest.fixture
def session():
    s = isolate.CheckSession()
    yield s
    s.close()


def test_checks_in_turn_share_one_worker_that_runs_each_cell_once(session, tmp_path):
    mark = tmp_path / "ran.txt"
    cells = _cells(mark)
    first = isolate.check_sources(cells[:1], PID, "first", session=session)
    second = isolate.check_sources(cells, PID + "assert square(3) == 9\n", "second", session=session)
    third = isolate.check_sources(cells, PID + "assert square(4) == 16\n", "third", session=session)
    assert _worker_pid(first) == _worker_pid(second) == _worker_pid(third)
    assert mark.read_text().split() == ["one", "two"]
    assert session.started == 1
    assert second.load_seconds < first.load_seconds   # the worker's start and the first cell are paid once


def test_a_check_whose_cells_do_not_extend_the_ones_run_gets_a_fresh_pair(session, tmp_path):
    mark = tmp_path / "ran.txt"
    cells = _cells(mark)
    before = _worker_pid(isolate.check_sources(cells, PID, "both", session=session))
    # The same cells, but the notebook's kernel says the second raised at its first line: not what the worker ran.
    after = isolate.check_sources(cells, PID, "again", session=session, outcomes={"two": KernelOutcome("raised", 1)})
    assert _worker_pid(after) != before and session.started == 2
    assert mark.read_text().split() == ["one", "two", "one"]   # the raised cell stops at its first line
    changed = [cells[0], ("two", "def square(x):\n    return x ** 2\n")]
    assert isolate.check_sources(changed, "assert square(5) == 25\n", "changed", session=session).passed
    assert session.started == 3


def test_a_time_out_ends_the_session_and_the_next_check_gets_a_fresh_pair(session, tmp_path, monkeypatch):
    monkeypatch.setenv("LADDER_FIRST_CALL_TIMEOUT_S", "3")
    cells = _cells(tmp_path / "ran.txt") + [("hang", "def hang():\n    while True:\n        pass\n")]
    before = _worker_pid(isolate.check_sources(cells, PID, "before", session=session))
    hung = isolate.check_sources(cells, "hang()\n", "hung", session=session)
    assert not hung.passed and hung.reason == "timed-out", hung
    after = isolate.check_sources(cells, PID + "assert square(3) == 9\n", "after", session=session)
    assert _worker_pid(after) != before and session.started == 2


def test_a_check_past_its_limit_stops_the_pair_and_the_next_gets_a_fresh_one(session, tmp_path):
    cells = _cells(tmp_path / "ran.txt") + [("hang", "def hang():\n    while True:\n        pass\n")]
    before = _worker_pid(isolate.check_sources(cells, PID, "before", session=session))
    stopped = isolate.check_sources(cells, "hang()\n", "stopped", session=session, timeout_s=4)
    assert not stopped.passed and stopped.reason == "timed-out", stopped
    assert _worker_pid(isolate.check_sources(cells, PID, "after", session=session)) != before


def test_a_worker_that_dies_ends_the_session(session, tmp_path):
    cells = _cells(tmp_path / "ran.txt") + [("die", "import os\ndef die():\n    os._exit(3)\n")]
    before = _worker_pid(isolate.check_sources(cells, PID, "before", session=session))
    died = isolate.check_sources(cells, "die()\n", "died", session=session)
    assert not died.passed and died.reason == "crashed", died
    assert _worker_pid(isolate.check_sources(cells, PID, "after", session=session)) != before


def test_a_deferred_check_is_checked_again_alone_in_the_same_session(session, tmp_path):
    """A check ahead that would time is deferred; the same session checks it again with the GPU to itself, and
    then times (what the worker was told about sharing is the current check's, not the first one's)."""
    cells = _cells(tmp_path / "ran.txt")
    times = ("from grader.harness.timing import CPUBackend\n"
             "CPUBackend(min_run_time_s=0.001).times_ms(lambda: square(3))\n")
    ahead = isolate.check_sources(cells, PID + times, "times", session=session, shared_gpu=True)
    assert not ahead.passed and ahead.reason == "deferred", ahead
    alone = isolate.check_sources(cells, PID + times, "times", session=session)
    assert alone.passed, alone.message
    assert session.started == 1


def test_a_new_check_lets_go_of_what_the_last_one_bound(monkeypatch):
    """In the worker: a check starts with its `Load`, which drops the last check's bound inputs and results,
    even after the learner's setup pinned the settings. (Whether a check shares its GPU is not the worker's to
    remember: each call's policy says so, and what it would have timed comes back as a fact of that call:
    tests/isolation/test_sharing.py.)"""
    import torch

    from grader import config
    from grader.isolation import worker
    from grader.calls import messages

    config.unpin()
    w = worker.Worker(conn=None, has_gpu=False)
    try:
        w.load(messages.Load([("one", "def square(x):\n    return x * x\n")]))
        config.pin()   # as the learner's setup cell does
        w.bind(messages.Bind("square", [(torch.ones(4),)], {}))
        w.keep = [torch.ones(4)]
        w.load(messages.Load([]))
        assert list(w.bound) == [messages.EMPTY_BATCH] and w.keep == []
        assert w.ns["square"](3) == 9   # the cells an earlier check ran stay
    finally:
        config.unpin()


# -- a notebook run's sessions (grader.isolation.isolate.CheckSessions) ------------------------------------------


def test_a_run_with_two_sessions_checks_two_cells_at_once(tmp_path):
    import threading
    import time

    sessions = isolate.CheckSessions(2)
    cells = _cells(tmp_path / "ran.txt")
    # Each check says when its 3 s began and ended, by the machine's clock.
    slow = PID + "import time\nbegan = time.time()\ntime.sleep(3)\nprint('slept', began, time.time())\n"
    verdicts = {}
    try:
        start = time.perf_counter()
        threads = [threading.Thread(target=lambda n=n: verdicts.update(
            {n: isolate.check_sources(cells, slow, n, session=sessions)})) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        both = time.perf_counter() - start
    finally:
        sessions.close()
    assert _worker_pid(verdicts["a"]) != _worker_pid(verdicts["b"]) and sessions.started == 2
    # The two checks' sleeps overlapped: one after another, the second would begin as the first ended. (Not the
    # run's wall time against the checks' sum: starting two sessions on a busy 2-core machine took 2.8 s once.)
    spans = [[float(x) for x in verdicts[n].stdout.split("slept", 1)[1].split()] for n in ("a", "b")]
    overlap = min(end for _, end in spans) - max(began for began, _ in spans)
    assert overlap > 2.0, (overlap, both, verdicts)


def test_a_check_goes_to_the_session_whose_worker_ran_most_of_its_cells(tmp_path):
    mark = tmp_path / "ran.txt"
    cells = _cells(mark)
    sessions = isolate.CheckSessions(2)
    try:
        first = _worker_pid(isolate.check_sources(cells[:1], PID, "first", session=sessions))
        assert _worker_pid(isolate.check_sources(cells, PID, "second", session=sessions)) == first
        # The second cell raised in the kernel: the worker of the checks so far ran it whole, so the check goes to the
        # session not started yet rather than starting the first again ...
        raised = isolate.check_sources(cells, PID, "raised", session=sessions,
                                       outcomes={"two": KernelOutcome("raised", 1)})
        assert _worker_pid(raised) != first and sessions.started == 2
        # ... which is still there for a check that assumes the cell ran whole.
        assert _worker_pid(isolate.check_sources(cells, PID, "again", session=sessions)) == first
    finally:
        sessions.close()
    assert mark.read_text().split() == ["one", "two", "one"] and sessions.started == 2


@pytest.mark.parametrize("width", [1, 2])
def test_a_deferred_check_ahead_keeps_its_session_for_the_notebooks_check_of_that_cell(tmp_path, width):
    """What grader.isolation.ahead.ChecksAhead does with the sessions: a check ahead that would time is deferred,
    and its session is reserved for it: no later check ahead takes it (with one session, none may start), and the
    notebook's own check of that cell gets it, with the worker that ran exactly its cells."""
    cells = _cells(tmp_path / "ran.txt")
    times = ("from grader.harness.timing import CPUBackend\n"
             "CPUBackend(min_run_time_s=0.001).times_ms(lambda: square(3))\n")
    sessions = isolate.CheckSessions(width)
    try:
        session = sessions.take(cells, {}, None)
        ahead = isolate.check_sources(cells, PID + times, "times", session=session, shared_gpu=True)
        assert not ahead.passed and ahead.reason == "deferred", ahead
        sessions.give_back(session, reserve_for="times")
        other = sessions.take(cells, {}, None)
        if width == 1:
            assert other is None
        else:
            assert other is not None and other is not session
            sessions.give_back(other)
        alone = isolate.check_sources(cells, PID + times, "times", session=sessions)
        assert alone.passed, alone.message
        assert _worker_pid(alone) == int(ahead.stdout.split()[1]) and sessions.started == 1
        assert sessions.take(cells, {}, None) is not None   # the reservation was used
    finally:
        sessions.close()


@pytest.mark.parametrize("cpus, chapter, expected", [
    (16, 4, 4),    # the chapter's (grading.toml)
    (4, 4, 2),     # at most half the CPUs
    (2, 4, 1),     # one session, every check when its cell is reached
    (16, 1, 1),
])
def test_how_many_checks_a_notebook_runs_at_once_by_default(monkeypatch, cpus, chapter, expected):
    from grader import config

    monkeypatch.delenv("LADDER_CHECKS_AT_ONCE", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    config.unpin()
    assert config.checks_at_once(chapter) == expected
    monkeypatch.setenv("LADDER_CHECKS_AT_ONCE", "3")   # the instructor's, whatever the chapter and the CPUs
    assert config.checks_at_once(chapter) == 3
