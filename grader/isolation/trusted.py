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
`timer-mismatch`, naming both figures (grader.isolation.seam.Batch.note_round). In the notebook's own
process every clock is the learner's too; the same arithmetic runs there, and `ladder check` says in each
speed cell what it can and cannot see (docs/isolation.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

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
