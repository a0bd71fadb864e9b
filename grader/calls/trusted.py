"""The time a speed verdict rests on, measured by the process that asks for a timed batch.

A timed batch runs where the learner's function runs: in the grader's worker (isolated grading), or in
the notebook's own process (a learner's cell, `ladder check`). The CUDA events around the batch are
read in that process, so they are the learner's claim: code there can rescale or replace the grader's
event reader. The figure that decides is the asking process's own clock around the whole request,
less what the same request costs with zero calls in it:

    trusted = wall(request of `reps` calls) - overhead,   overhead = median(zero-call requests), capped

Every fixed cost of a request (sending it, copying the inputs into the worker's own memory and the
results back, gathering the facts, the reply) is in both walls and cancels. In the worker the zero-call
request is the learner's process too, so it could be slowed on purpose to make the subtraction larger;
the overhead credited is therefore capped by what the asker can vouch for itself:

    cap = CLEAN_FACTOR x (the same empty request, timed on this worker before any learner code ran)
        + COPY_FACTOR x (the copies in and back, at the copy rate this process measured itself)
        + DEVICE_ALLOWANCE_MS (synchronizing and recording the events of an empty batch on a GPU)

so that a slowed zero-call request can hide at most the slack of the cap. With batches of about 40 ms
and zero-call requests of one to ten milliseconds, that slack is a few percent at most, and a batch much
shorter than its target is re-sized by the timing backend (grader.harness.timing) before it counts.

The trusted time decides. On an H100 it agreed with the events of honest kernels to within about ±0.5 ms
a request, on both paths (assets/results/timing-integrity/), but for a request now and then that a thread
or process woken late made a few milliseconds longer. The events are therefore a cross-check of the round,
not of each batch: when every batch of a timing round strays from the trusted time by more than its
request's measured overhead (the IPC and the copies) plus a little jitter, the cell fails as
`timer-mismatch`, naming both figures; where more than a third of all timed batches stray, but no whole
round, the speed report flags it for the instructor. Both are decided in one place, `TrustedTiming.judge`.
In the notebook's own process every clock is the learner's too; the same arithmetic runs there, and
`ladder check` says in each speed cell what it can and cannot see (docs/isolation.md).

This module is the one route of that time: `TrustedTiming` is the record a learner's timed batches keep
(grader.calls.seam.Batch): every request, the overhead credited, each round's time and SM clock, the
cross-check, its flag, the bound the traced batches set (grader.calls.rules.enforce_traced_timing) and
the figures the speed report keeps. The timing backend (grader.harness.timing) reaches it only through the
`Contender` interface (grader.calls.contender).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..errors import CheckFailed
from . import rules

# The cap's factors, from zero-call requests recorded on an H100 (assets/results/timing-integrity/):
# an empty request after the learner's cells loaded cost up to CLEAN_FACTOR times the same request before,
# the copies up to COPY_FACTOR times what this process's own copy rate predicts.
CLEAN_FACTOR = 2.0
COPY_FACTOR = 1.5
DEVICE_ALLOWANCE_MS = 0.5

# How far the events may stray from the trusted time beyond this request's overhead: scheduling jitter
# between two processes on one machine (a fraction of the batch, and an absolute floor).
JITTER_FRACTION = 0.02
JITTER_FLOOR_MS = 0.05


@dataclass
class Overhead:
    """The fixed cost of one timed-batch request, as the asking process knows it."""
    clean_ms: float = 0.0          # the same empty request before any learner code ran (0: unknown)
    copy_ms: float = 0.0           # the copies in and back, predicted from this process's own copy rate
    empties: list[float] = field(default_factory=list)   # zero-call requests timed so far (this batch's)

    def cap_ms(self) -> float:
        return CLEAN_FACTOR * self.clean_ms + COPY_FACTOR * self.copy_ms + DEVICE_ALLOWANCE_MS

    def measured_ms(self) -> float:
        return statistics.median(self.empties) if self.empties else 0.0

    def credited_ms(self) -> float:
        """What is subtracted from a request's wall time: the median zero-call request so far (the median,
        not the least: the least would credit less than a typical request costs and hold honest batches
        slow by the jitter), capped."""
        if not self.empties:
            return 0.0
        return min(statistics.median(self.empties), self.cap_ms())

    def describe(self) -> str:
        seen = f"{statistics.median(self.empties):.3f} ms (median)" if self.empties else "none yet"
        return (f"zero-call request {seen}, capped at {self.cap_ms():.3f} ms (clean request {self.clean_ms:.3f} ms, "
                f"copies {self.copy_ms:.3f} ms)")


@dataclass
class TimedRequest:
    """One timed batch as the asking process saw it."""
    reps: int
    wall_ms: float        # the asker's clock around the whole request
    event_ms: float       # what the process that ran the calls reported (its CUDA events; a claim)
    overhead_ms: float    # credited (Overhead.credited_ms)

    @property
    def trusted_ms(self) -> float:
        # Never zero: a request no slower than an empty one did no work, and the physical limits reject it
        # (grader.harness.exercise) rather than a division by zero.
        return max(self.wall_ms - self.overhead_ms, 1e-6)

    measured_ms: float = 0.0   # the zero-call requests' own median, uncapped (what the request really costs)

    def allowed_gap_ms(self) -> float:
        """The events may stray from the trusted time by the overhead the request was measured to cost (the
        IPC and the copies: uncapped, since where the cap holds the credited overhead is below it) and jitter."""
        return max(self.overhead_ms, self.measured_ms) + max(JITTER_FLOOR_MS, JITTER_FRACTION * self.trusted_ms)

    def agrees(self) -> bool:
        return abs(self.event_ms - self.trusted_ms) <= self.allowed_gap_ms()


def clean_request_ms(samples: list[float]) -> float:
    """The cost of an empty request from a few timed on a worker before learner code: the first warms up,
    the median of the rest resists one slow scheduling slice."""
    rest = samples[1:] or samples
    return statistics.median(rest) if rest else 0.0


# A round is judged on its last ROUND_BATCHES timed batches (the timing backend's round, its warm-up call left
# out): every one of them straying fails the cell. Over the whole timing, more than one in FLAG_ONE_IN of the timed
# batches straying, short of a whole round, is flagged for the instructor.
ROUND_BATCHES = 3
FLAG_ONE_IN = 3


@dataclass
class TrustedTiming:
    """Everything the time of one contender's timed batches rests on, and the one judge of its cross-check.

    `add` keeps each request and returns its trusted time; `end_round` closes a timing round (its time per call
    and SM clock, the events' claim) and judges it; `bound_by_trace` holds the last round against the traced
    batches; `flags` and `integrity` are what the speed report shows and records keep."""
    overhead: Overhead
    on_gpu: bool
    requests: list[TimedRequest] = field(default_factory=list)   # every timed (untraced) request
    # Per round, what the events recorded where the calls ran say per call (the claim the trusted time is checked
    # against; for records of how far the two lie apart).
    event_rounds_ms: list[float] = field(default_factory=list)
    last_round_ms: float | None = None    # the latest round's median per call (end_round)
    last_round_mhz: float | None = None   # the SM clock during that round, where NVML reads it
    bound: dict | None = None             # the figures of the traced batches' bound (bound_by_trace)
    _clock_mhz: list[int] = field(default_factory=list)
    _round_start: int = 0

    def note_empty(self, wall_ms: float) -> None:
        """A zero-call request, timed just before the next timed one."""
        self.overhead.empties.append(wall_ms)

    def add(self, reps: int, wall_ms: float, event_ms: float) -> TimedRequest:
        """One timed request of `reps` calls: the asker's clock around it, and the events' claim."""
        request = TimedRequest(reps, wall_ms, event_ms, self.overhead.credited_ms(), self.overhead.measured_ms())
        self.requests.append(request)
        return request

    def note_clock(self, state) -> None:
        """The SM clock read after one of this round's batches (grader.cuda.clocks)."""
        if state.readable and state.sm_mhz:
            self._clock_mhz.append(state.sm_mhz)

    def end_round(self, ms_per_call: float, what: str) -> None:
        """The timing backend's median time per call in the latest round (untraced, trusted); the round's
        batches judged against their events (`judge`)."""
        self.last_round_ms = ms_per_call
        self.last_round_mhz = sum(self._clock_mhz) / len(self._clock_mhz) if self._clock_mhz else None
        self._clock_mhz = []
        timed = self.requests[self._round_start:][-ROUND_BATCHES:]   # the round's batches (its warm-up call left out)
        self._round_start = len(self.requests)
        if timed:
            per_call = sorted(r.event_ms / r.reps for r in timed)
            self.event_rounds_ms.append(per_call[len(per_call) // 2])
        self.judge(timed, what)

    def judge(self, timed: list[TimedRequest], what: str | None = None) -> str | None:
        """The one place a disagreement between the events and the asker's clock is decided. With `what`, `timed`
        is one round: the events are the cross-check of a round, not of each batch. One batch may stray on its
        own: a thread or a process woken late costs a request a few milliseconds now and then (up to 11 ms in
        about one request in 25 on an H100, assets/results/timing-integrity/), which the round's median absorbs.
        Events rescaled where the calls run stray in every batch: a round in which every batch disagrees fails
        as `timer-mismatch`. Without `what`, `timed` is the whole timing: more than one in FLAG_ONE_IN of its batches
        straying is returned as a flag for the instructor. Without a GPU the events are the host clock: nothing
        is judged."""
        if not self.on_gpu:
            return None
        off = [r for r in timed if not r.agrees()]
        if what is not None:
            if len(timed) == ROUND_BATCHES and len(off) == len(timed):
                worst = sorted(timed, key=lambda r: abs(r.event_ms - r.trusted_ms))[1]   # the round's median
                raise CheckFailed(
                    f"{what}: the batch of {worst.reps} calls took {worst.trusted_ms:.3f} ms by the grader's own "
                    f"clock (the request's {worst.wall_ms:.3f} ms less its {worst.overhead_ms:.3f} ms overhead), "
                    f"but the events recorded where your code runs say {worst.event_ms:.3f} ms; they may differ by "
                    f"at most {worst.allowed_gap_ms():.3f} ms ({self.overhead.describe()}). The timing was "
                    "interfered with: the grader's clock and events must be left as they are.",
                    reason="timer-mismatch")
            return None
        if FLAG_ONE_IN * len(off) <= len(timed):
            return None
        worst = max(off, key=lambda r: abs(r.event_ms - r.trusted_ms) / r.trusted_ms)
        return (f"timing cross-check: {len(off)} of {len(timed)} timed batches disagreed with the grader's own "
                f"clock beyond the request's overhead (worst: events {worst.event_ms:.3f} ms, clock "
                f"{worst.trusted_ms:.3f} ms for {worst.reps} calls); flagged for the instructor")

    def flags(self) -> list[str]:
        """What the speed report flags about this timing's cross-check (`judge` over every timed batch)."""
        flag = self.judge([r for r in self.requests if r.reps > 1])
        return [flag] if flag else []

    def bound_by_trace(self, busy_ms: float, what: str, median_ms: float, traced_mhz: float | None) -> None:
        """The last round's time per call (or `median_ms`, the timing's, before any round ended) against the
        device time the learner's own kernels took per call in the traced batches right after (`busy_ms`, at
        `traced_mhz`): kept for the report, then judged (grader.calls.rules.enforce_traced_timing)."""
        untraced = self.last_round_ms or median_ms
        self.bound = {"untraced_ms": untraced, "busy_ms": busy_ms, "timed_mhz": self.last_round_mhz,
                      "traced_mhz": traced_mhz}
        rules.enforce_traced_timing(untraced, busy_ms, what, timed_mhz=self.last_round_mhz, traced_mhz=traced_mhz)

    def events_ms(self) -> float | None:
        """The events' claim per call: the median over rounds."""
        return _median(self.event_rounds_ms)

    def integrity(self) -> dict:
        """The trusted-time arithmetic's figures for one timing: what records of it keep
        (assets/results/timing-integrity/)."""
        requests, overhead = self.requests, self.overhead
        gaps = [(r.event_ms - r.trusted_ms) / r.trusted_ms for r in requests if r.trusted_ms > 0 and r.reps > 1]
        return {"requests": len(requests), "clean_ms": overhead.clean_ms, "copy_ms": overhead.copy_ms,
                "cap_ms": overhead.cap_ms(), "empty_ms_median": _median(overhead.empties),
                "empty_ms_max": max(overhead.empties, default=None),
                "event_gap_min": min(gaps, default=None), "event_gap_max": max(gaps, default=None),
                "allowed_gap_max_ms": max((r.allowed_gap_ms() for r in requests), default=None),
                "bound": self.bound}


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


_COPY_GBPS: float | None = None   # this process's own device-to-device copy rate, read + write counted


def own_copy_ms(nbytes: int) -> float:
    """What copying `nbytes` on the GPU (each byte read once and written once) costs at the copy rate this
    process measured itself. The ceilings `ladder doctor` caches are a file the learner's code could
    rewrite; this rate never leaves the asking process. 0 without a GPU or bytes."""
    global _COPY_GBPS
    if nbytes <= 0:   # (bytes on a GPU only: the caller counts CUDA tensors)
        return 0.0
    if _COPY_GBPS is None:
        import torch

        n = 128 * 2**20
        src, dst = torch.empty(n, dtype=torch.uint8, device="cuda"), torch.empty(n, dtype=torch.uint8, device="cuda")
        src.fill_(1)
        best = float("inf")
        for _ in range(4):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end))
        _COPY_GBPS = 2 * n / (best * 1e-3) / 1e9
        del src, dst
    return 2 * nbytes / (_COPY_GBPS * 1e9) * 1e3
