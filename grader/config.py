"""Every setting the grader reads from the environment, and every limit, in one place.

Each setting is read when it is asked for, never at import time: a test (or `ladder grade
--bars`) that sets a variable sees it take effect. In a process that runs learner code, `start()`
pins the settings first (`pin`): a learner's cell that sets one afterwards changes nothing in the
notebook's kernel, as it changes nothing in the isolated verifier, which reads its own environment.

Every variable, its default, what it is for and who sets it: the one table in docs/instructors.md ("Settings"),
which tests/test_settings_table.py holds to what this module reads. The grader's own processes are told what they
are in the messages that start them, never through the environment: the last section of this module keeps what
a process was told of itself (it starts quietly, the grader runs it); grader.cuda.sharing whether its check shares
the GPU, and grader.isolation.hung its run's record of hung functions.
"""

from __future__ import annotations

import os
from pathlib import Path

# Limits that are not settings.
MAX_KERNEL_RESTARTS = 3          # fresh kernels one notebook may get after its kernel dies or hangs
MAX_VERDICT_MESSAGE = 12000      # characters of a rejection message kept in a verdict
MAX_REPLY_BYTES = 64 * 2**20     # the largest reply the verifier reads from the worker
KERNEL_STARTUP_TIMEOUT_S = 120   # a notebook kernel that does not start in time fails the run
# How long a speed comparison's interleaved rounds may run while their spread stays above the target
# (grader.harness.timing.compare); the class summary names a speed cell that ran this long (classgrade.timing).
SPEED_ROUND_BUDGET_S = 20.0

_pinned: dict[str, str] | None = None


def pin() -> None:
    """Freeze this process's settings as they are now. `start()` calls it before any learner cell
    runs, so that `os.environ["LADDER_BARS"] = ...` in an answer cannot lower a bar for `ladder check`
    while `ladder grade` ignores it: both paths judge by the settings the grading began with. The first
    pin holds: an answer cell that sets a variable and calls `start()` again changes nothing either."""
    global _pinned
    if _pinned is None:
        _pinned = {name: value for name, value in os.environ.items() if name in VARIABLES}


def unpin() -> None:
    """Read the environment again (tests, which start sessions and then change settings)."""
    global _pinned
    _pinned = None


def _get(name: str) -> str | None:
    return _pinned.get(name) if _pinned is not None else os.environ.get(name)


def _float(name: str, default: float) -> float:
    raw = _get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of seconds") from None
    if not value > 0:
        raise ValueError(f"{name}={raw!r}: give a positive number of seconds")
    return value


def cell_timeout_s() -> int:
    return int(_float("LADDER_CELL_TIMEOUT_S", 900))


def first_call_timeout_s() -> float:
    """Seconds an isolated check's worker may take to start with the learner's cells (imports, kernels compiled at
    definition), and each learner function's first call in a check (compiles, autotunes)."""
    return _float("LADDER_FIRST_CALL_TIMEOUT_S", 300)


def call_timeout_s() -> float:
    return _float("LADDER_CALL_TIMEOUT_S", 60)


def isolated(default: bool) -> bool:
    """Whether graded cells are checked in fresh processes; `default` when LADDER_ISOLATED is unset."""
    raw = _get("LADDER_ISOLATED")
    return default if raw in (None, "") else raw != "0"


def bars_override() -> Path | None:
    raw = _get("LADDER_BARS")
    return Path(raw) if raw else None


UNGRADABLE_POLICIES = ("zero", "full")


def ungradable_policy() -> str:
    """How a speed cell is scored where its bar is out of reach on this GPU: "zero" (the default: points
    attest to a speed that was measured against a bar that means something here) or "full"."""
    raw = (_get("LADDER_UNGRADABLE") or "zero").strip().lower()
    if raw not in UNGRADABLE_POLICIES:
        raise ValueError(f"LADDER_UNGRADABLE={raw!r}: use one of {', '.join(UNGRADABLE_POLICIES)}")
    return raw


def unchecked_policy() -> str:
    """How a cell is scored when a check its verdict rests on could not run here (no device trace on a GPU,
    no instrumented copy to count tensor-core work): "zero" (the default: no cell passes on a check that
    did not run) or "full" (the points, with a note saying what was not checked)."""
    raw = (_get("LADDER_UNCHECKED") or "zero").strip().lower()
    if raw not in UNGRADABLE_POLICIES:
        raise ValueError(f"LADDER_UNCHECKED={raw!r}: use one of {', '.join(UNGRADABLE_POLICIES)}")
    return raw


def cache_dir() -> Path:
    raw = _get("LADDER_CACHE_DIR")
    if raw:
        return Path(raw)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "kernel-ladder"


def force_no_gpu() -> bool:
    return bool(_get("LADDER_FORCE_NO_GPU"))


def hide_disassemblers() -> bool:
    return bool(_get("LADDER_NO_DISASSEMBLER"))


def trace_enabled() -> bool:
    return _get("LADDER_TRACE") != "0"


def _at_least_one(name: str, default: int, meaning_of_one: str = "") -> int:
    """A whole-number setting of at least 1, or `default` where unset."""
    raw = _get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < 1:
        raise ValueError(f"{name}={raw!r}: at least 1{meaning_of_one}")
    return value


def checks_at_once(default: int) -> int:
    """How many of a notebook's graded checks run at once (grader.isolation.ahead), each in a session of its own; 1:
    every check when the notebook reaches its cell. LADDER_CHECKS_AT_ONCE, else `default` (the notebook's chapter's,
    grader/chapters/grading.toml) but at most half the CPUs this process may use: each session is a verifier and a
    worker, two CUDA starts (which several students graded at once on one machine take in turn in the driver's
    lock), and its checks compile the learner's kernels on the CPU."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return _at_least_one("LADDER_CHECKS_AT_ONCE", max(1, min(default, cpus // 2)), " (1 runs no check ahead)")


# Settings renamed: set under the old name, each is refused with its new one (check_all).
RENAMED = {"LADDER_LOAD_TIMEOUT_S": "LADDER_FIRST_CALL_TIMEOUT_S, which now also limits starting the worker with "
                                    "the learner's cells"}


def check_all() -> None:
    """Read every setting that has a value to check, raising ValueError (naming the variable) at the first bad one:
    `ladder grade` and `ladder check` call it before their first notebook, where a bad value read inside each
    notebook's run would fail every student of the class alike."""
    for old, new in RENAMED.items():
        if _get(old) is not None or os.environ.get(old) is not None:
            raise ValueError(f"{old} is no longer read: set {new}")
    for read in (cell_timeout_s, first_call_timeout_s, call_timeout_s, ungradable_policy, unchecked_policy):
        read()
    checks_at_once(1)
    raw = _get("LADDER_ISOLATED")
    if raw not in (None, "", "0", "1"):
        raise ValueError(f"LADDER_ISOLATED={raw!r}: use 1 (graded cells in the grader's own processes) or 0 (in the "
                         "notebook's kernel)")


# The variables above, for a child process that must see the same settings and for tests.
VARIABLES = ("LADDER_CELL_TIMEOUT_S", "LADDER_FIRST_CALL_TIMEOUT_S", "LADDER_CALL_TIMEOUT_S", "LADDER_ISOLATED",
             "LADDER_BARS", "LADDER_UNGRADABLE", "LADDER_UNCHECKED", "LADDER_CHECKS_AT_ONCE", "LADDER_CACHE_DIR",
             "LADDER_FORCE_NO_GPU", "LADDER_NO_DISASSEMBLER", "LADDER_TRACE")


# ----------------------------------------------------------------------------- what this process is
# Said in the process, never read from the environment (which a learner's process passes on to whatever it
# starts): by the grader's own programs of themselves (start_quietly), or by the process that runs a notebook, in
# its request to the kernel and in each check's Job (set_grader_run).

_quiet_start = False
_grader_run = False


def start_quietly() -> None:
    """This process is one of the grader's own (the worker, the sanitizer's runner, the profiler's target):
    `start()` in the learner's setup cell neither prints nor measures ceilings here."""
    global _quiet_start
    _quiet_start = True


def quiet_start() -> bool:
    return _quiet_start


def set_grader_run(on: bool) -> None:
    """This process runs a notebook's cells for `ladder check` or `ladder grade` (told by grader.notebooks.nbexec:
    a scratch request to each kernel it starts, a field of each isolated check's Job): what decides no score
    (profile(), ungraded timings, stretch goals) is left out on a GPU."""
    global _grader_run
    _grader_run = on


def grader_run() -> bool:
    return _grader_run
