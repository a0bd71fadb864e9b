"""Functions of the learner that hung, remembered across one notebook's checks.

Why: every isolated check starts a fresh worker, so a learner function that never returns made each check
that calls it wait out its own time limit (with the default limits, 300 s for each graded cell of one
student). The notebook's executor (grader.notebooks.nbexec) names a small file for the run in each check's
`Job` (`hung_record`, which the verifier passes to `use_record`); a check that sees one of the learner's
functions time out (grader.isolation.remote) writes the function's name there, and a later check of the same run that calls it fails at once with the
same reason, saying that it hung before. A check that does not call it is graded as usual.

Only a time-out seen with the GPU to itself is written: a check ahead of the notebook shares the GPU and
the CPUs with the student's other checks (grader.isolation.ahead), and a neighbour may have slowed it,
which is why its time-outs are checked again alone. Every check reads the file, so a check ahead that
calls a function already known to hang fails at once too (and is checked again alone, where it fails at
once as well). The worker running learner code never needs the file; a learner's code that writes into it
can only fail its own checks.
"""

from __future__ import annotations

from ..errors import CheckTimedOut

# In the message of a check answered at once: the class summary (grader.classgrade.timing) counts such cells
# apart from the one that waited out its limit.
ANSWERED_AT_ONCE = "timed out in an earlier check of this notebook"

_record: str | None = None


def use_record(path: str | None) -> None:
    """The file of the notebook run whose check starts now in this process (None: a check of no run)."""
    global _record
    _record = path


def hung_functions(path: str | None = None) -> set[str]:
    """The learner functions that timed out earlier in this notebook's run (in the record `path`, else this
    process's)."""
    path = path or _record
    if not path:
        return set()
    try:
        with open(path, encoding="utf-8") as f:
            return {line.strip() for line in f if line.strip()}
    except OSError:
        return set()


def refuse_if_hung(name: str, what: str) -> None:
    """Fail at once, as a time-out, if the learner's `name` hung in an earlier check of this run."""
    if name in hung_functions():
        raise CheckTimedOut(
            f"{what}: not run, because your `{name}` {ANSWERED_AT_ONCE} and was stopped there; it is counted "
            "as timed out here too without waiting out the limit again. Fix the "
            "hang (a loop that never ends, a launch far larger than intended) and every check that calls it "
            "runs again.")


def note_hung(name: str) -> None:
    """Remember that the learner's `name` timed out (in a check that had the GPU to itself: its caller decides)."""
    path = _record
    if not path or name in hung_functions():
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(name + "\n")
    except OSError:   # no record: later checks wait out their own limits, as without one
        pass
