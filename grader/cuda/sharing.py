"""A check that shares its GPU with other checks of the same student: whatever it timed would be false.

`ladder grade` and `ladder check --isolated` run a notebook's graded checks ahead of the notebook,
several at once (grader/isolation/ahead.py), each told so by its `Job` (grader.calls.messages), whose
verifier calls `set_shared`. Whether a kernel computes the right thing, writes out of bounds or allocates
O(N) memory does not depend on what else runs on the GPU; how fast it runs does, and so does which
configuration an autotuner would keep. So such a check's verdict is "deferred", never a grade, as soon as
it would time anything: the notebook's executor runs that check again, alone on its GPU, when the notebook
reaches its cell. Two places find it out:
- the verifier's own code (a timed batch, a ceiling's measurement; a speed check's start on a GPU with little
  memory: grader.harness.exercise.speed_check_ahead): `require_own_gpu`;
- a call of the learner's code in the worker (an autotuner about to time its configurations): the call is
  told by its `CallPolicy.shared_gpu`, stopped there, and its facts say so (`Facts.needs_own_gpu`:
  grader.calls.facts), which grader.calls.rules.enforce turns into `defer` in the verifier. A fact of the
  call comes back whatever the learner's code caught on the way.

The verifier remembers that its check was deferred (`deferred()`), and its verdict is "deferred" whatever
code between here and the verifier (a chapter's check, a test cell) made of `NeedsOwnGPU`: a check that
timed nothing may be taken from a shared GPU, one that tried to may not. `NeedsOwnGPU` is a BaseException
only so that it stops the check at once through the usual `except Exception`.
"""

from __future__ import annotations

from ..errors import DEFERRED  # noqa: F401 - the verdict's reason for such a check: never a grade, always run again


class NeedsOwnGPU(BaseException):
    """Raised where a check sharing its GPU would time something (see the module's docstring)."""


_raised: str | None = None
_shared = False


def set_shared(shared: bool) -> None:
    """Say whether the check starting now in this process shares its GPU: a session's verifier serves checks
    ahead and checks alone in turn."""
    global _shared
    _shared = shared


def shared() -> bool:
    """This process's check shares its GPU with other checks."""
    return _shared


def defer(what: str) -> None:
    """This process's check would time `what` on a GPU it shares: remembered, and the check stops here."""
    global _raised
    _raised = _raised or what
    raise NeedsOwnGPU(f"{what} needs the GPU to itself")


def require_own_gpu(what: str) -> None:
    """Defer this process's check if it shares its GPU; `what` names what would be timed."""
    if _shared:
        defer(what)


def clear() -> None:
    """Forget an earlier check's deferral (a session's verifier judges one check after another)."""
    global _raised
    _raised = None


def deferred() -> str | None:
    """What this process would have timed on a shared GPU, or None."""
    return _raised
