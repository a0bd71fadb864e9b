"""Checks for the small Python answers learners write: napkin math, predictions, counts.

A prediction is a function the learner writes (`gemm_flops(m, n, k)`); the check calls it on a few
sizes and compares with the right number, saying which call was wrong and what to think about.
"""

from __future__ import annotations

import math

from ..errors import CheckFailed, NotImplementedYet
from ..calls.seam import as_learner


def call_learner(fn, *args, exercise: str, names: str):
    """Call a learner's function through the seam (its result must be plain data, and the grader left as
    it was); a stub becomes NotImplementedYet naming the exercise, and any error names the call."""
    fn = as_learner(fn)
    try:
        return fn.call(*args)
    except NotImplementedYet:
        raise NotImplementedYet(f"exercise {exercise} is not written yet: write {names} in the cell above "
                                "this one, replacing `raise NotImplementedError()`.") from None
    except CheckFailed as exc:
        if exc.reason == "raised":  # name the call: "gemm_flops(1, 1, 1) raised ..."
            exc.args = (exc.args[0].replace(f"`{fn.name}`", f"{fn.name}{args}", 1),)
        raise


def require_close(got, want, what: str, rel_tol: float = 1e-6) -> None:
    """`got` must be a plain number within rel_tol of `want`; `what` says which call and gives a hint."""
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        raise CheckFailed(f"{what} should return a number, got {type(got).__name__}: {got!r}")
    if not math.isclose(got, want, rel_tol=rel_tol):
        raise CheckFailed(f"{what} = {got!r}, expected {want!r}")


def check_gemm_flops(gemm_flops, exercise: str, names: str, fn: str = "gemm_flops") -> None:
    """A learner's FLOP count of an M x N x K matrix product: 2·M·N·K (a multiply-add is 2 FLOPs).
    `fn` is the name the notebook asks for, used in the message."""
    for m, n, k in ((1, 1, 1), (2, 3, 5), (128, 256, 64), (4096, 4096, 4096), (8192, 8192, 1024)):
        require_close(call_learner(gemm_flops, m, n, k, exercise=exercise, names=names), 2 * m * n * k,
                      f"{fn}({m}, {n}, {k}) (hint: each of the M*N outputs is a sum of K products; "
                      "a multiply-add counts as 2 FLOPs)")


def check_floor_ms(floor_ms, exercise: str) -> None:
    """A learner's time floor in milliseconds for `flops` at `tflops` TFLOP/s."""
    for flops, tflops in ((2 * 4096**3, 650.0), (1e12, 1.0), (2.0, 100.0)):
        require_close(call_learner(floor_ms, flops, tflops, exercise=exercise, names="`floor_ms`"),
                      flops / (tflops * 1e12) * 1e3,
                      f"floor_ms({flops!r}, {tflops!r}) (hint: 1 TFLOP/s is 1e12 FLOPs per second; answer in "
                      "milliseconds)")


def check_diagnosis(diagnose, diagnosis) -> None:
    """A "diagnose" exercise (grader.profiles.diagnose): the learner's `diagnosis()` returns (binding
    constraint, next rung) for the case's two recorded profiles; for a chapter with several cases, one such
    pair per case, in order."""
    from ..profiles.diagnose import cases, judge, judge_all

    if isinstance(diagnose, tuple):
        key = diagnose[0].key.split(" ")[0]
        answer = call_learner(diagnosis, exercise=key, names="`diagnosis`")
        for line in judge_all(diagnose, answer):
            print(line)
        return
    (case,) = cases(diagnose)
    answer = call_learner(diagnosis, exercise=case.key, names="`diagnosis`")
    print(judge(case, answer))
