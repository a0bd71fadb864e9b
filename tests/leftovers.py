"""Processes a test left running, found by a mark in their command lines: what tests of grader.processes and of
the checks' containment (tests/isolation/test_containment.py) look for. Each test marks its processes with a
name of its own, so that tests run side by side never count each other's."""

from __future__ import annotations

import contextlib
import os
import time


def marked(mark: str) -> list[int]:
    """Live processes whose command line holds `mark`, by pid (a zombie's is empty)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def wait_for(predicate, timeout_s: float = 10.0) -> bool:
    """Whether `predicate()` came true within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@contextlib.contextmanager
def daemons_leave_this_process():
    """Within it, a daemon started below this process (a server's double fork) is not adopted by it: the suite's
    process is a subreaper once a notebook has run in it (grader.processes.become_subreaper), and a session's
    server adopted there (PostgreSQL's postmaster, say) is a descendant whose fresh children (an autovacuum
    worker) a check run later in the same process would judge as processes the learner's call started."""
    import ctypes

    from grader.processes import PR_SET_CHILD_SUBREAPER

    PR_GET_CHILD_SUBREAPER = PR_SET_CHILD_SUBREAPER + 1   # linux/prctl.h
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(0)
    was = libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value
    if was:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    try:
        yield
    finally:
        if was:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
