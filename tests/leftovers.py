"""Processes a test left running, found by a mark in their command lines: what tests of grader.processes and of
the checks' containment (tests/isolation/test_containment.py) look for. Each test marks its processes with a
name of its own, so that tests run side by side never count each other's."""

from __future__ import annotations

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
