"""Time a learner's kernel against torch's, interleaved, in the same process and the same run.

One timing round measures every contender once, in an order that rotates from round to round, so
that clock ramps and a neighbour's load fall on all of them alike. Rounds repeat until the spread
across rounds is small, or every round has put the learner on the same side of the bar (`clear_of`),
or the time budget is spent; the verdict uses the median over rounds.

Each measurement comes from a backend:
- `BatchBackend` (graded, on a GPU): batches of back-to-back calls between CUDA events, the end
  event after a device-wide synchronize, with an L2 flush before each batch. A learner's function
  is a `Contender` (grader.calls.contender) that runs its batches where it runs, and whose time
  is computed and cross-checked by grader.calls.trusted.
- `CPUBackend` is `torch.utils.benchmark.Timer`, so CI exercises the same rounds, statistics and
  verdicts without a GPU.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import config
from ..cuda import clocks, neighbours
from ..cuda.sharing import require_own_gpu
from ..calls.contender import Contender


MAX_REPS = 5000
RESIZES = 3   # times a short batch is sized again before its time counts
LONG_BATCH = 4   # a batch this many times its target sizes the rest of its round from its own calls


def reps_for(target_ms: float, ms_per_call: float) -> int:
    """Calls in a batch that lasts about `target_ms` when one call takes `ms_per_call` (1 to 5,000)."""
    return int(min(MAX_REPS, max(1, math.ceil(target_ms / max(ms_per_call, 1e-3)))))


class BatchBackend:
    """Batches of back-to-back calls between two CUDA events, the second after a device-wide synchronize.

    The graded backend. A batch is `reps` calls in a row; the end event is recorded after
    `torch.cuda.synchronize()`, so work the calls left on any stream falls inside the interval. The
    L2 cache is flushed before each batch. A `Contender` (a learner's function, grader.calls.seam.Batch)
    runs its batch where it runs, on the same rules; its time is this process's clock around the request
    (grader.calls.trusted). A plain callable is timed here, as a `_Here` contender. `reps` is chosen so that a batch
    lasts about `target_ms`. Without a GPU the host clock stands in for the events.
    """

    name = "batch"

    # 40 ms batches: a learner's batch is timed as its request less an empty request (grader.calls.trusted),
    # and the empty request of a grader worker varied by about ±0.5 ms on an H100 (copies, synchronizations): in a
    # batch of 20 ms that was ±2.5% of the verdict, in one of 40 ms it is about ±1%.
    def __init__(self, target_ms: float = 40.0, batches: int = 3, device: str = "cuda"):
        self.target_ms, self.batches, self.device = target_ms, batches, device
        self._cache = None
        self.clock = clocks.ClockSpan()   # the SM clock after every batch (grader.cuda.clocks)
        # The GPU's other processes before the timing and after every batch (grader.cuda.neighbours).
        self.neighbours = neighbours.Neighbours() if device == "cuda" else None
        self._watching = False

    def synchronize(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def flush(self) -> None:
        if self.device != "cuda":
            return
        import torch

        if self._cache is None:
            self._cache = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
        self._cache.zero_()
        torch.cuda.synchronize()

    def times_ms(self, fn: Contender | Callable[[], object]) -> list[float]:
        require_own_gpu("timing")
        contender = fn if isinstance(fn, Contender) else _Here(fn, self.device)
        runner = contender.timed_batch
        if self.neighbours is not None:
            self.neighbours.add_ours(contender.process_id)   # where a learner's batch runs
            if not self._watching:
                self.neighbours.begin()
                self._watching = True
        self.flush()
        one = runner(1)  # warm-up, and the estimate that sizes the batches
        # A learner's function timed through grader.calls.seam knows its last round's median per call, which
        # sizes the batches better than one call: there one call's time is a request's wall time less the
        # overhead measured for such requests, whose jitter can be as large as a short kernel's call. Taken as the
        # estimate, a near-zero first call sized batches at MAX_REPS, seconds each, and one speed cell's five
        # rounds took 2-31 s (assets/results/class-grading/driver-lock-h100x4, `speed_timing`).
        known = contender.last_round_ms
        reps = reps_for(self.target_ms, known if known else one)
        samples = []
        for _ in range(self.batches):
            self.flush()
            ms = runner(reps)
            # A batch far shorter than its target was sized by a slow first call (compiling, or a launcher
            # that is slow only when it is first called): sized again from its own calls, and measured again,
            # so that a request's fixed cost stays a small part of every batch (grader.calls.trusted).
            for _ in range(RESIZES):
                if ms >= self.target_ms / 2 or reps >= MAX_REPS:
                    break
                reps = reps_for(self.target_ms, ms / reps)
                self.flush()
                ms = runner(reps)
            samples.append(ms / reps)
            if ms > LONG_BATCH * self.target_ms:   # sized by a first call that looked faster than the calls are
                reps = reps_for(self.target_ms, ms / reps)
            state = clocks.read() if self.device == "cuda" else None
            if self.neighbours is not None:
                self.neighbours.sample()
            if state is not None:
                self.clock.add(state)
                contender.note_clock(state)
        # A learner's function keeps its latest round's time, and judges the round's events against it
        # (grader.calls.trusted): the traced batches that follow the timing (grader.harness.exercise) are
        # compared with the round closest to them in time.
        contender.note_round(statistics.median(samples))
        return samples


class _Here(Contender):
    """A plain callable (torch's contenders, the copy ceiling) timed in this process: between two CUDA events,
    the second after a device-wide synchronize; without a GPU, by the host clock."""

    def __init__(self, fn: Callable[[], object], device: str):
        self.fn, self.device = fn, device

    def timed_batch(self, reps: int) -> float:
        fn = self.fn
        if self.device != "cuda":
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            return (time.perf_counter() - t0) * 1e3
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)


class CPUBackend:
    """Without a GPU: `torch.utils.benchmark.Timer` for torch's contenders; a learner's function, a `Contender`
    timed in batches where it runs, in batches sized to `min_run_time_s`."""

    name = "cpu"

    def __init__(self, min_run_time_s: float = 0.02):
        self.min_run_time_s = min_run_time_s
        self._reps: dict = {}   # each learner's function's batch size, found in its first round

    def times_ms(self, fn: Contender | Callable[[], object]) -> list[float]:
        require_own_gpu("timing")
        if isinstance(fn, Contender):
            if fn not in self._reps:
                self._reps[fn] = self._batch_size(fn)
            reps = self._reps[fn]
            samples = [fn.timed_batch(reps) for _ in range(3)]
            if max(samples) < self.min_run_time_s * 1e3 / LONG_BATCH and reps < MAX_REPS:
                # Sized by batches that a busy moment made long: every batch of the round fell far short of its
                # target, where the clock's resolution and an empty request's noise decide. Sized again.
                reps = self._reps[fn] = self._batch_size(fn)
                samples = [fn.timed_batch(reps) for _ in range(3)]
            return [ms / reps for ms in samples]
        import torch
        from torch.utils.benchmark import Timer

        # Timer runs on one thread unless told otherwise; the learner's batches above run on torch's
        # whole pool, so both sides get the same threads or the comparison measures the pool.
        m = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
            min_run_time=self.min_run_time_s)
        return [t * 1e3 for t in m.times]

    def _batch_size(self, fn: Contender) -> int:
        """Calls in a batch that lasts at least `min_run_time_s`, found by growing the batch 1, 2, 5, 10, 20, ...
        until it does (as timeit's autorange; torch's Timer sizes a callable, not a batch run elsewhere). One call's
        trusted time cannot size it: it is the request's wall time less an empty request's, and on a busy CPU that
        difference is noise for a call under a millisecond (down to the 1e-6 ms floor, which asked for 5,000 calls).
        A batch that lasts its target is one whose calls, not the noise, decide its time."""
        target_ms = self.min_run_time_s * 1e3
        reps, steps = 1, (1, 2, 5)
        for decade in range(5):
            for step in steps:
                reps = min(MAX_REPS, step * 10 ** decade)
                # The shorter of two batches: a busy moment lengthens one of them far more often than both.
                if reps == MAX_REPS or min(fn.timed_batch(reps), fn.timed_batch(reps)) >= target_ms:
                    return reps
        return reps

    def synchronize(self) -> None:
        pass


def default_backend():
    from ..cuda.gpu import has_gpu

    return BatchBackend() if has_gpu() else CPUBackend()


@dataclass
class Timing:
    """One contender's round medians, in milliseconds."""
    name: str
    rounds_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.rounds_ms)

    @property
    def spread(self) -> float:
        """Interquartile range over the median, across rounds (0.02 = 2%)."""
        if len(self.rounds_ms) < 2:
            return float("inf")
        q = statistics.quantiles(self.rounds_ms, n=4, method="inclusive")
        return (q[2] - q[0]) / self.median_ms


@dataclass
class Comparison:
    candidate: Timing
    baseline: Timing
    others: dict[str, Timing]
    rounds: int
    elapsed_s: float
    backend: str
    clock: clocks.ClockSpan | None = None   # the SM clock after each batch, on a GPU
    stopped: str = "spread"   # what ended the rounds: "spread", "verdict", "budget" or "rounds" (`compare`)
    neighbours: neighbours.Neighbours | None = None   # the GPU's other processes while timed, on a GPU

    @property
    def speedup(self) -> float:
        """Baseline time over candidate time: above 1 means the candidate is faster."""
        return self.baseline.median_ms / self.candidate.median_ms

    def speedup_over(self, name: str) -> float:
        return self.others[name].median_ms / self.candidate.median_ms

    def against_fastest_of(self, names: list[str]) -> "Comparison":
        """The same measurements, with the fastest of the named contenders as the baseline.

        For operations torch can run more than one way (a transposed copy: `out.copy_(x.t())` or
        `x.t().contiguous()`), the bar is measured against whichever was faster in this run.
        """
        pool = {self.baseline.name: self.baseline, **self.others}
        missing = [n for n in names if n not in pool]
        if missing:
            raise KeyError(f"no timings for {missing}; timed: {sorted(pool)}")
        fastest = min((pool[n] for n in names), key=lambda t: t.median_ms)
        others = {n: t for n, t in pool.items() if n != fastest.name}
        return Comparison(candidate=self.candidate, baseline=fastest, others=others, rounds=self.rounds,
                          elapsed_s=self.elapsed_s, backend=self.backend, clock=self.clock, stopped=self.stopped,
                          neighbours=self.neighbours)


# Settled means every round clears the bar by this much, on the same side. It is the spread target: a round's
# ratio has about that much noise (grader.calls.trusted), so further rounds would not move the median across.
SETTLED_MARGIN = 0.02


def clear_of(bar: float, baselines: list[str], candidate: str = "yours",
             margin: float = SETTLED_MARGIN, scale: float = 1.0) -> Callable[[dict[str, Timing]], bool]:
    """A `settled` test for `compare`: true once every round's speedup, against the fastest of `baselines` in
    that round and times `scale`, lies on the same side of `bar` and at least `margin` from it. (`scale` turns a
    speedup over a copy of other bytes into a fraction of the copy ceiling: grader.harness.ceilings.)

    The verdict is the median round's side of the bar, so it cannot change while every round agrees. Without
    this, a check kept timing until the spread of each contender was under the target, and the learner's time,
    the grader's own clock less an empty request, varies by about that target from round to round: the same
    correct kernel took 5 rounds in one grading and the whole budget in the next, and a busy machine made it
    more often (assets/results/class-grading/)."""
    def settled(timings: dict[str, Timing]) -> bool:
        mine = timings[candidate].rounds_ms
        ratios = [scale * min(timings[n].rounds_ms[i] for n in baselines) / ms for i, ms in enumerate(mine) if ms > 0]
        if len(ratios) < len(mine) or not ratios:
            return False
        return all(r >= bar * (1 + margin) for r in ratios) or all(r < bar * (1 - margin) for r in ratios)
    return settled


def compare(candidate: Callable[[], object], baseline: Callable[[], object], *,
            others: dict[str, Callable[[], object]] | None = None, backend=None,
            min_rounds: int = 5, max_rounds: int = 25, target_spread: float = 0.02,
            budget_s: float = config.SPEED_ROUND_BUDGET_S, candidate_name: str = "yours", baseline_name: str = "torch",
            settled: Callable[[dict[str, Timing]], bool] | None = None) -> Comparison:
    """Interleave rounds of all contenders until the spread is below target, `settled` (given the timings so far,
    e.g. `clear_of`) says the verdict can no longer change, or the budget is spent; `min_rounds` at least."""
    backend = backend or default_backend()
    contenders = [(candidate_name, candidate), (baseline_name, baseline), *(others or {}).items()]
    timings = {name: Timing(name) for name, _ in contenders}
    start = time.perf_counter()
    rounds, stopped = 0, "rounds"
    while rounds < max_rounds:
        shift = rounds % len(contenders)
        for name, fn in contenders[shift:] + contenders[:shift]:
            samples = backend.times_ms(fn)
            timings[name].rounds_ms.append(statistics.median(samples))
        backend.synchronize()
        rounds += 1
        if rounds >= min_rounds:
            worst = max(timings[candidate_name].spread, timings[baseline_name].spread)
            if worst <= target_spread:
                stopped = "spread"
            elif settled is not None and settled(timings):
                stopped = "verdict"
            elif time.perf_counter() - start > budget_s:
                stopped = "budget"
            else:
                continue
            break
    return Comparison(candidate=timings[candidate_name], baseline=timings[baseline_name],
                      others={n: timings[n] for n, _ in contenders[2:]}, rounds=rounds,
                      elapsed_s=time.perf_counter() - start, backend=backend.name,
                      clock=getattr(backend, "clock", None), stopped=stopped,
                      neighbours=getattr(backend, "neighbours", None))


def bench(fn: Callable[[], object], backend=None) -> float:
    """Median milliseconds of one function (for exploratory plots, not for verdicts)."""
    backend = backend or default_backend()
    return statistics.median(backend.times_ms(fn))
