"""The machine's slots for checks ahead, shared by every student graded on it at once.

Why: each GPU worker of `ladder grade --gpus N` grades its own student, and runs that student's checks
ahead of the notebook (grader.isolation.ahead) as wide as a student graded alone (config.checks_at_once).
Every check runs the learner's cells, in a session's processes that start Python and CUDA, and compiles the
learner's kernels, CPU work all of it; four workers asked the CPUs for four times what one student does, each
at its notebook's start, and every student slowed (a correct chapter-1 student: 14 s alone, 28-29 s with
four workers on 16 CPUs). Dividing the width among the workers instead would make each student as slow as a
quarter of the CPUs allows, even while the other students are in their notebook's own cells. So a check
ahead takes one of the machine's slots for as long as it runs: one a CPU, and never fewer than the checks one
notebook runs at once (`host_slots`), so a student alone never waits, and students together share what the
CPUs can do. The slots are lock files (flock), which the kernel releases when a process ends, so a killed
worker never keeps one.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

_POLL_S = 0.05


def host_slots(at_once: int) -> int:
    """The machine's slots for checks ahead, where each notebook runs `at_once` of its checks at once
    (config.checks_at_once)."""
    return max(at_once, os.cpu_count() or 1)


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"ladder-check-slots-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@contextmanager
def machine_slot(count: int, cancel: threading.Event | None = None):
    """Hold one of the machine's `count` check slots (host_slots) while the block runs; yields the seconds waited for
    it. A `cancel` set while waiting stops the wait (the check then stops at once by itself)."""
    folder = _folder()
    start = time.perf_counter()
    handle = None
    while handle is None:
        for index in range(count):
            fh = open(folder / f"slot-{index}", "a")   # noqa: SIM115 - held until the block ends
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            handle = fh
            break
        if handle is None:
            if cancel is not None and cancel.is_set():
                break
            time.sleep(_POLL_S)
    try:
        yield time.perf_counter() - start
    finally:
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
