"""Checks for the small Python answers learners write: napkin math, predictions, counts.

A prediction is a function the learner writes (`gemm_flops(m, n, k)`); the check calls it on a few
sizes and compares with the right number, saying which call was wrong and what to think about.
"""

from __future__ import annotations

import math

from .errors import CheckFailed, NotImplementedYet


def call_learner(fn, *args, exercise: str, names: str):
    """Call a learner's function; a stub becomes NotImplementedYet, any other error a CheckFailed."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise NotImplementedYet(f"exercise {exercise} is not written yet: write {names} in the cell above "
                                "this one, replacing `raise NotImplementedError()`.") from None
    except Exception as exc:
        raise CheckFailed(f"{getattr(fn, '__name__', 'your function')}{args} raised {type(exc).__name__}: {exc}") from None


def require_close(got, want, what: str, rel_tol: float = 1e-6) -> None:
    """`got` must be a plain number within rel_tol of `want`; `what` says which call and gives a hint."""
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        raise CheckFailed(f"{what} should return a number, got {type(got).__name__}: {got!r}")
    if not math.isclose(got, want, rel_tol=rel_tol):
        raise CheckFailed(f"{what} = {got!r}, expected {want!r}")
