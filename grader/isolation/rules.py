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
   tensors -> `library-compute`; a kernel ran that the learner's code did not make (a Triton kernel
   from an installed package; on a GPU, any kernel in the device trace that the learner's own launches
   do not account for, other than fills and copies: grader.isolation.foreign) -> `library-compute`;
   the device trace, which works in this process, lost every one of the learner's kernels ->
   `tampered`
After a batch of timed calls, also: a call that launched no kernel, or not every kernel a checked
call of the same shape launched -> `kernel-unused`; GPU events longer than the host's own clock
around the batch -> `timer-mismatch`; in a traced batch, the kernel rule of 6. After timing, calls
timed untraced that ran much faster than the learner's kernels kept the device busy in the traced
batches right after -> `library-compute` (`enforce_traced_timing`).

Every rejection for a result that did not come from the learner's kernel is made by `kernel_unused`,
so its wording is the same wherever it is found (here, and the harness's no-op probe).
"""

from __future__ import annotations

from ..errors import CheckFailed, NotImplementedYet
from . import foreign
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
        if not torch_ops:
            enforce_own_kernels(facts, what)
        lost_trace(facts, what)


def enforce_own_kernels(facts: Facts, what: str) -> None:
    """Every kernel that ran must be the learner's own, or a fill or copy (grader.isolation.foreign)."""
    if facts.package_launches:
        names = ", ".join(f"`{n}`" for n in facts.package_launches[:3])
        raise CheckFailed(f"{what}: the Triton kernel {names}, defined in an installed package, ran inside it; "
                          "only your kernel may compute. Write the kernel in your notebook.",
                          reason="library-compute")
    device = facts.device
    if device is None or not device.traced:
        return
    unaccounted = foreign.foreign_kernels(device, facts.own_launches)
    if unaccounted:
        op, extra = unaccounted[0]
        times = f" {extra} times" if extra > 1 else ""
        more = ""
        if len(unaccounted) > 1:
            more = " Also: " + "; ".join(foreign.describe(o) for o, _ in unaccounted[1:4]) + "."
        raise CheckFailed(f"{foreign.describe(op)} ran{times} inside {what}; only your kernel may compute. The "
                          "launcher may allocate, view and fill (memsets, copies, torch and CuPy fills); every other "
                          f"kernel must be one your code made (load_kernel, or @triton.jit in your notebook).{more}",
                          reason="library-compute")


def lost_trace(facts: Facts, what: str) -> None:
    """The device trace recorded none of the kernels the learner's code launched: only code that stops
    CUPTI's tracing can do that (the trace worked when this process started using it)."""
    device = facts.device
    ran = [n for n, count in facts.own_launches.items() if count]
    if device is None or not device.traced or not ran:
        return
    if not any(device.count(n) for n in ran):
        raise tampered([f"the device trace (it recorded none of {', '.join(f'`{n}`' for n in ran[:3])})"],
                       f"{what}: your code")


def enforce_traced_timing(untraced_ms: float, busy_ms: float, what: str, tolerance: float = 0.20) -> None:
    """Calls timed without tracing (`untraced_ms` per call, the last timing round) cannot be much faster
    than the device was busy per call in the traced batches right after (`busy_ms`, the lesser of two):
    tracing adds gaps between kernels, not time inside them. A launcher that computed with a library
    only while no trace was running would be. The tolerance covers clock changes between the round and
    the traced batches: on an H100 a tensor-core GEMM's kernel time moved by up to 17% between runs,
    so a launcher that switches to a library when untraced is caught when that gains it more than 20%."""
    if busy_ms > 0 and untraced_ms < (1 - tolerance) * busy_ms:
        raise CheckFailed(f"{what}: timed without a trace, each call took {untraced_ms:.4f} ms, {100 * untraced_ms / busy_ms:.0f}% "
                          f"of the {busy_ms:.4f} ms your kernels alone kept the GPU busy per call when traced right "
                          "after: something other than your kernels computed while the calls were timed. Only your "
                          "kernel may compute.", reason="library-compute")


def enforce_batch(facts: BatchFacts, what: str, reps: int, required: frozenset, host_ms: float,
                  torch_ops: bool = False) -> None:
    """A batch of `reps` timed calls: the rules above, every call launching every `required` kernel,
    and events no longer than `host_ms`, the checking process's own clock around the whole request."""
    enforce(facts, what, launcher=False)
    if not torch_ops:
        enforce_own_kernels(facts, what)
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
