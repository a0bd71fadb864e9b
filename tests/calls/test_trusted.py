"""The time a speed verdict rests on (grader.calls.trusted, kept by seam.Batch): the asking process's clock
around a request, less the zero-call request before it, capped; the events where the calls ran cross-check each
round, and one judge decides whether a disagreement fails the cell or is flagged."""
import pytest

from grader.errors import CheckFailed
from grader.calls import seam
from grader.calls.messages import BatchFacts
from grader.calls.trusted import Overhead, TimedRequest, TrustedTiming


class Clock:
    def __init__(self):
        self.s = 100.0

    def __call__(self):
        return self.s


class Scripted(seam.LearnerFunction):
    """A learner's function whose requests take a known time on the asker's clock: `fixed_ms` for any request,
    plus `per_call_ms` a call, and whose events claim `event_scale` of the calls' time (1: honest)."""

    def __init__(self, clock: Clock, per_call_ms: float, fixed_ms: float = 1.0, event_scale: float = 1.0,
                 empty_extra_ms: float = 0.0, clean_ms: float = 1.0):
        super().__init__("scripted")
        self.clock, self.per_call_ms, self.fixed_ms, self.event_scale = clock, per_call_ms, fixed_ms, event_scale
        self.empty_extra_ms, self.clean_ms = empty_extra_ms, clean_ms
        self.slow: set[int] = set()   # request numbers that wake late (a few ms more)
        self.count = 0

    def _bind(self, argsets):
        return argsets

    def _overhead(self, argsets):
        return Overhead(clean_ms=self.clean_ms)

    def _timed(self, bound, reps, traced=False):
        self.count += 1
        calls = reps * self.per_call_ms
        spent = self.fixed_ms + calls + (self.empty_extra_ms if reps == 0 else 0.0)
        spent += 5.0 if self.count in self.slow else 0.0
        self.clock.s += spent / 1e3
        return BatchFacts(event_ms=calls * self.event_scale if reps else 0.01, host_ms=calls,
                          min_launches=1 if reps else 0, kernel_sets=[(("k",), reps)] if reps else [])


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(seam, "NOW", c)
    return c


def batch_of(fn, on_gpu=True):
    b = fn.batch([("x",)])
    b.trusted.on_gpu = on_gpu
    return b


def test_a_timed_batch_is_the_askers_clock_less_the_zero_call_request(clock):
    b = batch_of(Scripted(clock, per_call_ms=0.5, fixed_ms=1.2))
    assert b.timed_batch(40) == pytest.approx(20.0)   # 21.2 ms of request, 1.2 of it the empty request's
    (request,) = b.trusted.requests
    assert (request.wall_ms, request.overhead_ms, request.event_ms) == pytest.approx((21.2, 1.2, 20.0))
    assert request.agrees()


def test_events_rescaled_where_the_calls_ran_do_not_move_the_time_and_fail_the_round(clock):
    fn = Scripted(clock, per_call_ms=0.5, event_scale=0.82)   # the grader's event reader multiplied by 0.82
    b = batch_of(fn)
    times = [b.timed_batch(40) for _ in range(4)]   # the warm-up call, then the round's three batches
    assert times[1:] == pytest.approx([20.0] * 3)   # the clock's figure, not the events' 16.4
    with pytest.raises(CheckFailed) as exc:
        b.note_round(20.0 / 40)
    assert exc.value.reason == "timer-mismatch"
    assert "by the grader's own clock" in str(exc.value) and "16.400 ms" in str(exc.value)


def test_one_batch_woken_late_neither_fails_the_round_nor_flags_the_timing(clock):
    fn = Scripted(clock, per_call_ms=0.5)
    fn.slow = {4}   # the second timed request (its empty request is number 3) took 5 ms more
    b = batch_of(fn)
    times = [b.timed_batch(40) for _ in range(4)]
    assert times[1] == pytest.approx(25.0) and times[2:] == pytest.approx([20.0, 20.0])
    b.note_round(sorted(t / 40 for t in times[1:])[1])   # the median: 20 ms
    assert b.last_round_ms == b.trusted.last_round_ms == pytest.approx(0.5)
    assert b.trusted.flags() == []   # 1 batch of 4


def test_without_a_gpu_the_events_are_the_host_clock_and_no_round_fails(clock):
    b = batch_of(Scripted(clock, per_call_ms=0.5, event_scale=0.5), on_gpu=False)
    for _ in range(4):
        b.timed_batch(40)
    b.note_round(0.5)


def test_a_slowed_zero_call_request_is_credited_no_more_than_its_cap(clock):
    # The learner's code makes every empty request 30 ms long, to make the calls look 30 ms shorter: the credit
    # stops at the cap (twice the clean request, plus the device allowance), and the calls keep their time.
    fn = Scripted(clock, per_call_ms=0.5, empty_extra_ms=30.0, clean_ms=1.0)
    b = batch_of(fn)
    cap = b.trusted.overhead.cap_ms()
    assert cap == pytest.approx(2.5)
    assert b.timed_batch(40) == pytest.approx(21.0 - cap)


def test_the_overhead_credited_is_the_median_of_the_zero_call_requests():
    o = Overhead(clean_ms=5.0, copy_ms=2.0)
    assert o.credited_ms() == 0.0
    o.empties += [1.0, 9.0, 1.2]
    assert o.credited_ms() == pytest.approx(1.2)   # one slow empty request moves nothing
    o.empties += [20.0, 20.0, 20.0]
    assert o.credited_ms() == pytest.approx(o.cap_ms()) == pytest.approx(2 * 5.0 + 1.5 * 2.0 + 0.5)
    r = TimedRequest(reps=10, wall_ms=22.0, event_ms=20.0, overhead_ms=1.5, measured_ms=1.5)
    assert r.trusted_ms == pytest.approx(20.5) and r.agrees()
    assert not TimedRequest(10, 22.0, 15.0, 1.5, 1.5).agrees()
    assert TimedRequest(10, 1.0, 0.5, 1.5, 1.5).trusted_ms > 0   # never zero, never negative


def test_stray_batches_short_of_a_whole_round_are_flagged_once_more_than_one_in_three(clock):
    # Every third request woken late by 5 ms: no round has all three batches astray, so none fails; the flag counts
    # the batches over the whole timing, and one in three is not yet more than one in three.
    fn = Scripted(clock, per_call_ms=0.5)
    b = batch_of(fn)
    fn.slow = {2, 8, 14}   # the first, fourth and seventh timed requests (each after its empty request)
    for _ in range(3):
        for _ in range(3):
            b.timed_batch(40)
        b.note_round(0.5)
    assert sum(not r.agrees() for r in b.trusted.requests) == 3 and b.trusted.flags() == []
    fn.slow = {20}   # one more astray: 4 of 10
    b.timed_batch(40)
    (flag,) = b.trusted.flags()
    assert flag.startswith("timing cross-check: 4 of 10 timed batches disagreed") and "flagged for the instructor" in flag
    b.trusted.on_gpu = False   # without a GPU the events are the host clock: nothing is judged
    assert b.trusted.flags() == []


def test_the_traced_bound_is_kept_with_the_timing_and_fails_a_round_faster_than_its_kernels(clock):
    b = batch_of(Scripted(clock, per_call_ms=0.5))
    for _ in range(4):
        b.timed_batch(40)
    b.note_round(0.5)
    b.trusted.bound_by_trace(0.49, "`scripted` (timed runs)", median_ms=0.6, traced_mhz=None)
    assert b.trusted.integrity()["bound"] == {"untraced_ms": 0.5, "busy_ms": 0.49, "timed_mhz": None,
                                             "traced_mhz": None}
    with pytest.raises(CheckFailed) as exc:
        b.trusted.bound_by_trace(1.0, "`scripted` (timed runs)", median_ms=0.6, traced_mhz=None)
    assert exc.value.reason == "library-compute"
    assert TrustedTiming(Overhead(), on_gpu=True).integrity()["bound"] is None
