"""Facts into verdicts: the rules every check applies, on every path, in a fixed order.

Before any check, in the process that runs it: attributes of torch, Triton, the clock or the grader
that the learner's cells replaced -> `tampered` (grader.isolation.seam.as_learner, the verifier, and
`ladder check`'s probe around each graded cell in the notebook's kernel).

After each call of the learner's function (grader.isolation.facts gathered what it did):
1. attributes of torch, Triton, the clock or the grader replaced -> `tampered`
2. a kernel raised and the learner's code caught it and carried on -> `swallowed-error`
3. a thread the call started still runs -> `stray-thread`
4. persisting L2 cache reserved -> `l2-persist`
5. a result that is not plain data -> `not-plain`
6. for kernel launchers: no kernel launched -> `kernel-unused`; torch computed on the grader's
   tensors -> `library-compute`
After a batch of timed calls, also: a call that launched no kernel, or not every kernel a checked
call of the same shape launched -> `kernel-unused`; GPU events longer than the host's own clock
around the batch -> `timer-mismatch`.

Every rejection for a result that did not come from the learner's kernel is made by `kernel_unused`,
so its wording is the same wherever it is found (here, and the harness's no-op probe).
"""

from __future__ import annotations

from ..errors import CheckFailed, NotImplementedYet
from .messages import BatchFacts, Facts


def kernel_unused(what: str, how: str) -> CheckFailed:
    """The result did not come from the learner's kernel: `how` says what was seen."""
    return CheckFailed(f"{what}: {how} The result must come from your kernel: every call must do the whole "
                       "computation, not take it from torch, CuPy or results kept from an earlier call.",
                       reason="kernel-unused")


def tampered(replaced: list[str], what: str = "your notebook's cells") -> CheckFailed:
    """The learner's code replaced part of torch, Triton, the clock or the grader: the same words wherever
    it is found (before a check, during a call, after a cell)."""
    return CheckFailed(f"{what} replaced {', '.join(replaced[:6])}. The grader's timer, comparisons and "
                       "checks must be left as they are (grading computes the verdict in a separate process "
                       "anyway).", reason="tampered")


def enforce(facts: Facts, what: str, launcher: bool, torch_ops: bool = False) -> None:
    if facts.tampered:
        raise tampered(facts.tampered, f"{what}: your code")
    if facts.errors:
        raise CheckFailed(f"{what}: your kernel raised an error and your code caught it and carried on:\n  "
                          + "\n  ".join(facts.errors[:3])
                          + "\nLet errors from your kernel propagate; a fallback hides a broken kernel.",
                          reason="swallowed-error")
    if facts.stray_threads:
        raise CheckFailed(f"{what}: returned while a thread it started was still running "
                          f"({', '.join(facts.stray_threads)}). All work must be done, or at least launched on "
                          "the GPU, before your function returns.", reason="stray-thread")
    if facts.l2_limit:
        raise CheckFailed(f"{what}: your code reserved {facts.l2_limit:,} bytes of persisting L2 cache "
                          "(cudaLimitPersistingL2CacheSize). Timed kernels must start from the same cache as "
                          "torch's.", reason="l2-persist")
    if facts.not_plain:
        raise CheckFailed(f"{what}: returned a {facts.not_plain}; the grader accepts only plain values "
                          "(numbers, strings, tuples and lists of them, torch tensors, NumPy arrays).",
                          reason="not-plain")
    if launcher:
        if not facts.launches:
            raise kernel_unused(what, "returned without launching any kernel made with load_kernel or "
                                      "@triton.jit.")
        if facts.ops and not torch_ops:
            raise CheckFailed(f"{what}: torch computed with the grader's tensors inside your launcher "
                              f"({', '.join(facts.ops[:6])}). Only your kernel may compute; the launcher may "
                              "allocate, view and fill.", reason="library-compute")


def enforce_batch(facts: BatchFacts, what: str, reps: int, required: frozenset, host_ms: float) -> None:
    """A batch of `reps` timed calls: the rules above, every call launching every `required` kernel,
    and events no longer than `host_ms`, the checking process's own clock around the whole request."""
    enforce(facts, what, launcher=False)
    if reps and facts.min_launches == 0:
        raise kernel_unused(what, "some of the timed calls launched none of your kernels.")
    for names, count in facts.kernel_sets:
        missing = sorted(required - set(names))
        if missing:
            ran = ", ".join(f"`{n}`" for n in names) or "nothing"
            raise kernel_unused(what, f"{count} of {reps} timed calls launched only {ran}, without "
                                      f"{', '.join(f'`{n}`' for n in missing)}, which a checked call on inputs of "
                                      "the same shape launched.")
    if facts.event_ms is None or facts.event_ms <= 0:
        raise CheckFailed(f"{what}: the batch reported no time.", reason="timer-mismatch")
    if facts.event_ms > host_ms:
        raise CheckFailed(f"{what}: the GPU's events report {facts.event_ms:.3f} ms for the batch, more than the "
                          f"{host_ms:.3f} ms the grader's own clock saw for the whole request: the timing was "
                          "interfered with.", reason="timer-mismatch")


# The reason code of an error a test cell raised, by the exception's class name: for errors that
# carry none (a LadderError carries its own). A test cell that names something the learner's cells
# never defined means that part is not written: the same on every path.
_BY_NAME = {"NotImplementedError": "not-written", "NotImplementedYet": "not-written", "NameError": "not-written",
            "AssertionError": "failed", "DeadKernelError": "crashed", "CellTimeoutError": "timed-out",
            "NotRun": "not-run"}


def reason_for(exc_or_name) -> str:
    """The reason code for an exception (or an exception's class name, from a notebook's error output)."""
    reason = getattr(exc_or_name, "reason", None)
    if reason:
        return reason
    name = exc_or_name if isinstance(exc_or_name, str) else type(exc_or_name).__name__
    return _BY_NAME.get(name, "failed")


def not_defined(name: str, problems: list[str]) -> NotImplementedYet:
    """A test cell uses a name the learner's cells do not define."""
    note = "\n".join(problems[:5])
    return NotImplementedYet(f"your notebook does not define `{name}`, which this test uses"
                             + (f".\nRunning your cells met these problems:\n{note}" if note else
                                ". Define it in the exercise's answer cell."))
