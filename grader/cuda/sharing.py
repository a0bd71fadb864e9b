"""A check that shares its GPU with other checks of the same student: whatever it timed would be false.

`ladder grade` and `ladder check --isolated` run a notebook's graded checks ahead of the notebook,
several at once (grader/isolation/ahead.py), each told so by the message that starts it (the verifier by its
`Job`, the worker by its `Load`: grader.calls.messages), which calls `set_shared`. Whether a
kernel computes the right thing, writes out of bounds or allocates O(N) memory does not depend on what
else runs on the GPU; how fast it runs does, and so does which configuration an autotuner would keep.
So, in such a check, the first thing that would time anything (a timed batch, a ceiling's measurement,
an autotuner timing its configurations) raises `NeedsOwnGPU`, and the check's verdict is "deferred": the
notebook's executor runs that check again, alone on its GPU, when the notebook reaches its cell.

`NeedsOwnGPU` is a BaseException, and the module also remembers that it was raised, because the code
between the raise and the verifier (a learner's launcher, a chapter's check) may catch exceptions: a
check that timed nothing may be taken from a shared GPU, one that tried to may not.
"""

from __future__ import annotations

from ..errors import DEFERRED  # noqa: F401 - the verdict's reason for such a check: never a grade, always run again


class NeedsOwnGPU(BaseException):
    """Raised where a check sharing its GPU would time something (see the module's docstring)."""


_raised: str | None = None
_shared = False


def set_shared(shared: bool) -> None:
    """Say whether the check starting now in this process shares its GPU: a session's verifier and worker serve
    checks ahead and checks alone in turn."""
    global _shared
    _shared = shared


def shared() -> bool:
    """This process's check shares its GPU with other checks."""
    return _shared


def require_own_gpu(what: str) -> None:
    """Raise NeedsOwnGPU if this process's check shares its GPU; `what` names what would be timed."""
    global _raised
    if _shared:
        _raised = _raised or what
        raise NeedsOwnGPU(f"{what} needs the GPU to itself")


def note_deferred(what: str) -> None:
    """The worker said its call needed the GPU to itself (grader.isolation.remote)."""
    global _raised
    _raised = _raised or what


def clear() -> None:
    """Forget an earlier check's deferral (a verifier run in a process that judged one before: tests)."""
    global _raised
    _raised = None


def deferred() -> str | None:
    """What this process would have timed on a shared GPU, or None."""
    return _raised
