"""Facts into verdicts: the rules every check applies, on every path, in a fixed order.

Before any check, in the process that runs it: attributes of torch, Triton, the clock or the grader
that the learner's cells replaced -> `tampered` (grader.calls.seam.as_learner, the verifier, and
`ladder check`'s probe around each graded cell in the notebook's kernel).

After each call of the learner's function (grader.calls.facts gathered what it did):
1. attributes of torch, Triton, the clock or the grader replaced -> `tampered`
2. a kernel raised and the learner's code caught it and carried on -> `swallowed-error`
3. a thread the call started still runs -> `stray-thread`; a process it started (detached or not) still runs ->
   `stray-process`
4. persisting L2 cache reserved -> `l2-persist`
5. a tensor the grader handed over got another dtype (`out.data = ...`) -> `wrong-dtype`; a result that is
   not plain data -> `not-plain`
6. for kernel launchers: no kernel launched -> `kernel-unused`; torch computed on the grader's
   tensors -> `library-compute`; a kernel ran that the learner's code did not make (a Triton kernel
   from an installed package; on a GPU, any kernel in the device trace that the learner's own launches
   do not account for, other than fills and copies: grader.calls.foreign) -> `library-compute`;
   the device trace, which works in this process, lost every one of the learner's kernels ->
   `tampered`
After a batch of timed calls, also: a call that launched no kernel, or not every kernel a checked
call of the same shape launched -> `kernel-unused`; GPU events longer than the asking process's own
clock around the request -> `timer-mismatch` (and straying from the trusted time, that clock less the
request's measured overhead, in every batch of a timing round: grader.calls.trusted); in a
traced batch, the kernel rule of 6. After timing, calls timed untraced that were faster than the
learner's own kernels kept the device busy in the traced batches right after, beyond tracing's own
cost and the clock change between them -> `library-compute` (`enforce_traced_timing`).

Every rejection for a result that did not come from the learner's kernel is made by `kernel_unused`,
so its wording is the same wherever it is found (here, and the harness's no-op probe).
"""

from __future__ import annotations

from .. import config
from ..cuda import sharing
from ..cuda.gpu import has_gpu
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
    if facts.needs_own_gpu:   # first: the call stopped there, and nothing else it did is the learner's verdict
        sharing.defer(facts.needs_own_gpu)
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
    if facts.stray_processes:
        raise CheckFailed(f"{what}: returned while a process it started was still running "
                          f"({'; '.join(facts.stray_processes[:3])}). Your function must do its work in its own "
                          "process and leave nothing running; the grader ends every process your code starts when "
                          "the check ends.", reason="stray-process")
    if facts.l2_limit:
        raise CheckFailed(f"{what}: your code reserved {facts.l2_limit:,} bytes of persisting L2 cache "
                          "(cudaLimitPersistingL2CacheSize). Timed kernels must start from the same cache as "
                          "torch's.", reason="l2-persist")
    if facts.retyped:
        raise CheckFailed(f"{what}: your code changed the dtype of a tensor the grader handed it "
                          f"({'; '.join(facts.retyped)}), e.g. with `out.data = ...`. Write the result into `out` "
                          "in place, in the dtype the exercise asks for.", reason="wrong-dtype")
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
    """Every kernel that ran must be the learner's own, or a fill or copy (grader.calls.foreign)."""
    if facts.package_launches:
        names = ", ".join(f"`{n}`" for n in facts.package_launches[:3])
        raise CheckFailed(f"{what}: the Triton kernel {names}, defined in an installed package, ran inside it; "
                          "only your kernel may compute. Write the kernel in your notebook.",
                          reason="library-compute")
    device = facts.device
    if device is None:
        return
    if not device.traced:
        if has_gpu():   # the trace could have run here: what it would have seen is unknown
            unchecked(what, "the device trace, which sees every kernel that ran (a library's included),",
                      device.note or "not traced")
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


_NOTED_UNCHECKED: set[str] = set()


def unchecked(what: str, check: str, why: str) -> None:
    """A check this verdict rests on could not run on this machine. No cell passes on it silently: the
    instructor's policy scores it (LADDER_UNCHECKED), "zero" by default."""
    text = (f"{what}: {check} could not run on this machine ({why}), so this cell cannot be verified here.")
    if config.unchecked_policy() == "zero":
        raise CheckFailed(text + " The instructor's policy for such cells is LADDER_UNCHECKED=zero: it scores 0. "
                          "`ladder doctor` says what this machine lacks.", reason="unchecked")
    if check not in _NOTED_UNCHECKED:   # said once per check and process: a cell makes many calls
        _NOTED_UNCHECKED.add(check)
        print(f"Note: {text} The instructor's policy is LADDER_UNCHECKED=full: the cell gets its points.")


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


# The bound between calls timed untraced and the device time of the learner's own kernels when traced
# right after (enforce_traced_timing). Tracing stretched back-to-back kernels by 3.5% on an H100
# (assets/results/timing-integrity/), so a traced batch's busy time overstates the kernels by at most that;
# the rest is the spread between one timing round and two traced batches, and the trusted time's own
# error: the untraced figure is the asking process's clock less the median zero-call request
# (grader.calls.trusted), which ran up to 0.9 ms (2.25% of a 40 ms batch) below the events of nine
# requests in ten on an H100; an honest 8192^2 transpose on an H200 timed 0.2980 ms a call against 0.3203
# ms traced, under the bound without this term. Where the SM clock is read (grader.cuda.clocks) the busy
# time is scaled to the clock of the timing round; where it is not, clock changes must be allowed for
# whole: a tensor-core GEMM's kernel time moved by up to 17% between runs.
TRACING_COST = 0.035
ROUND_SPREAD = 0.03
TRUSTED_ERROR = 0.025
UNCLOCKED_TOLERANCE = 0.20


def traced_bound(busy_ms: float, timed_mhz: float | None = None, traced_mhz: float | None = None) -> tuple[float, str]:
    """The least time per call an untraced call can take, given the learner's kernels kept the device busy
    `busy_ms` per call in a traced batch: (bound, how it was reached)."""
    if timed_mhz and traced_mhz:
        # A faster clock during the timing round shortens the kernels at most in proportion; a slower one
        # never shortens them.
        scale = min(1.0, traced_mhz / timed_mhz)
        bound = busy_ms * scale * (1 - TRACING_COST - ROUND_SPREAD - TRUSTED_ERROR)
        return bound, (f"{busy_ms:.4f} ms traced at {traced_mhz:.0f} MHz, scaled to the timing round's "
                       f"{timed_mhz:.0f} MHz, less {100 * TRACING_COST:.1f}% for tracing, "
                       f"{100 * ROUND_SPREAD:.0f}% for spread and {100 * TRUSTED_ERROR:.1f}% for the clock's error")
    return busy_ms * (1 - UNCLOCKED_TOLERANCE), (f"{busy_ms:.4f} ms traced, less {100 * UNCLOCKED_TOLERANCE:.0f}% "
                                                 "(the SM clock could not be read, so clock changes are allowed whole)")


def enforce_traced_timing(untraced_ms: float, busy_ms: float, what: str, timed_mhz: float | None = None,
                          traced_mhz: float | None = None) -> None:
    """A call timed without a trace (`untraced_ms` per call, the last timing round, trusted) cannot be faster
    than the learner's own kernels kept the device busy per call in the traced batches right after
    (`busy_ms`, the lesser of two): tracing adds gaps between kernels and a little time inside them, never
    less work. A launcher that computed with a library only while no trace was running would be."""
    bound, how = traced_bound(busy_ms, timed_mhz, traced_mhz)
    if busy_ms > 0 and untraced_ms < bound:
        raise CheckFailed(f"{what}: timed without a trace, each call took {untraced_ms:.4f} ms, less than the "
                          f"{bound:.4f} ms your kernels alone need ({how}): something other than your kernels "
                          "computed while the calls were timed. Only your kernel may compute.",
                          reason="library-compute")


# How much less device time each of a timed call's own kernels may take than the same kernel in a checked call
# on inputs of the same shape. A checked call may run on a GPU still ramping its clock up from idle (345 to 1980
# MHz on an H100: 5.7 times slower); a kernel whose programs return at once, or run on one tile of a 4096^3
# product, does a thousandth of the work. Thread blocks need no allowance: a kernel launched on the same
# shape runs the same grid, so a timed call must run at least as many blocks of each kernel as a checked one.
WORK_FRACTION = 1 / 16
# The same, against a checked call made on fresh inputs right after the traced batches, with the GPU at the clock
# they ran at (grader.harness.exercise): no clock ramp to allow for. A kernel doing the same work runs about as long
# in both: the timed calls' inputs may sit in L2 where their two sets fit there, and a power-capped clock lengthens
# them; half leaves room for both. A launcher that runs its kernel over an
# eighth of K while timed and copies a kept product in ran it for about a sixth to a quarter of that, which the
# allowance of 1/16 let through and only the physical limit could catch, near its edge on an H100
# (assets/results/exploits/suite-h100x4, `fingerprint_short_k`).
WARM_WORK_FRACTION = 1 / 2


def enforce_work(batch: dict[str, tuple[float, int]] | None, checked: dict[str, tuple[float, int]] | None,
                 reps: int, what: str, fraction: float = WORK_FRACTION, reference: str = "a checked call") -> None:
    """Each kernel a checked call of the same shape launched must, in a traced batch of `reps` calls, run per
    call at least the thread blocks it ran there and at least `fraction` of its device time
    (grader.calls.seam.Batch; `batch` and `checked` map a kernel's name to (microseconds, blocks)).
    `reference` names the checked call in the message."""
    if batch is None or not checked or reps <= 0:
        return
    for name, (checked_us, checked_blocks) in sorted(checked.items()):
        us, blocks = batch.get(name, (0.0, 0))
        if checked_blocks and blocks < checked_blocks * reps:
            raise kernel_unused(what, f"your kernel `{name}` ran {blocks / reps:,.0f} thread blocks per timed call, "
                                      f"against {checked_blocks:,} in {reference} on inputs of the same shape: the "
                                      "timed calls launched it on a part of the work.")
        if checked_us and us / reps < fraction * checked_us:
            raise kernel_unused(what, f"your kernel `{name}` ran for {us / reps:.1f} µs per timed call, against "
                                      f"{checked_us:.1f} µs in {reference} on inputs of the same shape: the timed "
                                      "calls launched it on a fraction of the work.")


def enforce_total_work(batch: dict[str, tuple[float, int]] | None, reference: dict[str, tuple[float, int]] | None,
                       reps: int, what: str, against: str) -> None:
    """All the learner's own kernels together, per call of a traced batch of `reps`, against all of them in the
    `against` call (WARM_WORK_FRACTION of its device time): the per-kernel rule compares only the kernels every
    checked call launched, and work spread over kernels that only some calls launch escapes it."""
    if batch is None or not reference or reps <= 0:
        return
    reference_us, us = sum(t for t, _ in reference.values()), sum(t for t, _ in batch.values()) / reps
    if reference_us and us < WARM_WORK_FRACTION * reference_us:
        raise kernel_unused(what, f"your kernels ran for {us:.1f} µs per timed call in all, against {reference_us:.1f} "
                                  f"µs in {against} on inputs of the same shape: the timed calls did a fraction of "
                                  "the work.")


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
