"""What a check returns: the results that test cells assign, later cells plot, and grading pickles
into the notebook's kernel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .ceilings import COPY_NAME
from .kernel_time import KernelTime
from .timing import Comparison

CEILING_NAMES = {"copy_gbps": "copy ceiling", "fp32_tflops": "fp32 matmul ceiling (torch.mm, TF32 off)",
                 "fp16_tflops": "fp16 matmul ceiling (torch.mm)",
                 "fp8_tflops": "fp8 matmul ceiling (torch._scaled_mm, e4m3)"}


@dataclass
class CorrectnessResult:
    key: str
    sizes: list
    trials: int

    def __repr__(self) -> str:
        return f"<{self.key}: correct on {self.trials} trials>"


@dataclass
class SpeedResult:
    key: str
    title: str
    size: Any
    gpu: str
    comparison: Comparison
    bar: float
    graded: bool
    passed: bool
    bytes_moved: int
    flops: int | None
    ceiling_name: str
    ceiling_value: float | None
    baseline_name: str
    others: dict[str, float] = field(default_factory=dict)       # name -> ms
    unavailable: dict[str, str] = field(default_factory=dict)    # name -> why not measured
    flags: list[str] = field(default_factory=list)               # for the instructor (implausible speed)
    kernels: KernelTime | None = None                             # from the traced batch (grader.cuda.trace)
    timed_where: str = ""                                         # what the process that timed could see
    events_ms: float | None = None                                # per call by the events where the calls ran (a claim)
    integrity: dict = field(default_factory=dict)                 # the trusted-time arithmetic's figures, for records
    remeasured_from: float | None = None                          # the first graded figure, when measured again
    # why it was measured again: "throttled" (heat or the power brake) or "crowded" (another process computed on
    # the GPU meanwhile, grader.cuda.neighbours); and, for "crowded", what the first timing saw
    remeasured_because: str | None = None
    first_neighbours: str | None = None
    # The bar's kind (grader.harness.bars.KINDS). A copy-ceiling bar grades `fraction`, the learner's bytes per
    # second over `run_copy_gbps`, the copy ceiling measured in the same rounds; the speedup is reported beside it.
    kind: str = "speedup"
    fraction: float | None = None
    run_copy_gbps: float | None = None
    provisional: str = ""                                         # the bar is not calibrated yet: why

    @property
    def value(self) -> float:
        """The figure the bar judges: the fraction of the copy ceiling, or the speedup."""
        return self.fraction if self.fraction is not None else self.speedup

    def value_at(self, ms: float) -> float:
        """The figure the bar would judge had a call taken `ms` (the kernels alone, say)."""
        if self.fraction is not None:
            return self.fraction * self.ms / ms
        return self.baseline_ms / ms

    def describe_value(self, value: float) -> str:
        """"0.82 of this GPU's copy ceiling" or "1.90x torch.add": a figure of this bar's kind, in words."""
        if self.fraction is not None:
            return f"{value:.2f} of this GPU's copy ceiling"
        return f"{value:.2f}x {self.baseline_name}"

    @property
    def clock(self):
        """The SM clock after each batch of the timing (grader.cuda.clocks.ClockSpan), or None."""
        return self.comparison.clock

    @property
    def throttled(self) -> bool:
        return bool(self.clock is not None and self.clock.throttled)

    @property
    def neighbours(self):
        """The GPU's other processes while it was timed (grader.cuda.neighbours.Neighbours), or None."""
        return self.comparison.neighbours

    @property
    def crowded(self) -> bool:
        """Another process, not the grader's for this timing, computed on the GPU while it was timed."""
        return bool(self.neighbours is not None and self.neighbours.crowded)

    def as_record(self) -> dict:
        """The figures a verdict rests on, as `ladder check --json` reports them (docs/check-json.md)."""
        return {"key": self.key, "ratio": round(self.speedup, 4), "bar": self.bar, "passed": self.passed,
                "kind": self.kind, "fraction": None if self.fraction is None else round(self.fraction, 4),
                "copy_gbps": None if self.run_copy_gbps is None else round(self.run_copy_gbps, 1),
                "ms": round(self.ms, 5), "baseline_ms": round(self.baseline_ms, 5), "baseline": self.baseline_name,
                "gpu": self.gpu, "timed": self.timed_where, "throttled": self.throttled,
                "remeasured_from": None if self.remeasured_from is None else round(self.remeasured_from, 4),
                "events_ms": None if self.events_ms is None else round(self.events_ms, 5),
                # how long the interleaved rounds ran, how many there were and what ended them (the spread, a
                # settled verdict, the time budget): a check that stops at the budget is where a busy machine
                # makes grading slower
                "rounds": self.comparison.rounds, "timing_s": round(self.comparison.elapsed_s, 2),
                "stopped": self.comparison.stopped,
                "clock": self.clock.as_dict() if self.clock is not None and self.clock.readings else None,
                # the GPU's other processes while timed (grader.cuda.neighbours), and why it was measured again
                "crowded": self.crowded, "remeasured_because": self.remeasured_because,
                "neighbours": self.neighbours.as_dict() if self.neighbours is not None else None}

    @property
    def speedup(self) -> float:
        return self.comparison.speedup

    @property
    def ms(self) -> float:
        return self.comparison.candidate.median_ms

    @property
    def baseline_ms(self) -> float:
        return self.comparison.baseline.median_ms

    @property
    def kernel_ms(self) -> float | None:
        """The learner's kernels' GPU time per call, from the traced batch; None where not traced."""
        if self.kernels is None or self.kernels.note is not None or not self.kernels.rows:
            return None
        return self.kernels.kernel_ms

    def gbps(self, ms: float | None = None) -> float:
        return self.bytes_moved / ((ms if ms is not None else self.ms) * 1e-3) / 1e9

    def tflops(self, ms: float | None = None) -> float:
        if not self.flops:
            raise ValueError(f"exercise {self.key} does not count FLOPs")
        return self.flops / ((ms if ms is not None else self.ms) * 1e-3) / 1e12

    @property
    def unit(self) -> str:
        return "TFLOP/s" if self.flops else "GB/s"

    def rate(self, ms: float | None = None) -> float:
        """Achieved TFLOP/s for FLOP-counted exercises, GB/s otherwise."""
        return self.tflops(ms) if self.flops else self.gbps(ms)

    def pct_of_ceiling(self, ms: float | None = None) -> float | None:
        return 100 * self.rate(ms) / self.ceiling_value if self.ceiling_value else None

    def headline(self) -> str:
        """The verdict's first line: the bar and the figure it judged, and for a copy-ceiling bar the speedup
        beside it ("0.82 of this GPU's copy ceiling (bar 0.70); 1.90x gather + SDPA")."""
        mark = "✓" if self.passed else "✗"
        verdict = "passed" if self.passed else "below the bar"
        graded = "" if self.graded else ", not graded"
        provisional = ", a provisional bar: not calibrated yet" if self.provisional else ""
        if self.fraction is None:
            return (f"{mark} {self.key} speed, {self.title}: {verdict} "
                    f"(bar {self.bar:.2f}x {self.baseline_name}{graded}{provisional})")
        return (f"{mark} {self.key} speed, {self.title}: {verdict}: {self.describe_value(self.fraction)} "
                f"(bar {self.bar:.2f}{graded}{provisional}); {self.speedup:.2f}x {self.baseline_name}")

    def _rate_text(self, ms: float | None = None) -> str:
        return f"{self.rate(ms):8,.1f} {self.unit}" if self.flops else f"{self.rate(ms):8,.0f} {self.unit}"

    def report(self) -> str:
        c = self.comparison
        lines = [self.headline()]
        ceiling = ""
        if self.ceiling_value:
            what = CEILING_NAMES.get(self.ceiling_name, self.ceiling_name)
            ceiling = (f"  {self.pct_of_ceiling():4.0f}% of this GPU's {what}{' in this run' if self.run_copy_gbps else ''} "
                       f"({self.ceiling_value:,.{1 if self.flops else 0}f} {self.unit})")
        lines.append(f"  {'yours':<16}{self.ms:9.3f} ms ±{100 * c.candidate.spread:4.1f}%"
                     f"  {self._rate_text()}{ceiling}")
        lines.append(f"  {self.baseline_name:<16}{self.baseline_ms:9.3f} ms ±{100 * c.baseline.spread:4.1f}%"
                     f"  {self._rate_text(self.baseline_ms)}")
        for name, ms in self.others.items():
            lines.append(f"  {name:<16}{ms:9.3f} ms         {self._rate_text(ms)}"
                         f"  (not graded; yours runs at {ms / self.ms:.2f}x its speed)")
        if self.run_copy_gbps is not None:
            copy_ms = self.comparison.others.get(COPY_NAME)
            timed = f"{copy_ms.median_ms:9.3f} ms " if copy_ms is not None else ""
            lines.append(f"  {COPY_NAME:<16}{timed}{self.run_copy_gbps:8,.0f} GB/s  a device-to-device copy timed in the "
                         f"same rounds as yours (bytes read + written): the bar's measure")
        for name, why in self.unavailable.items():
            lines.append(f"  {name:<16} not measured: {why}")
        for flag in self.flags:
            lines.append(f"  ⚑ {flag}")
        if self.kernels is not None:
            lines += self.kernels.lines(self.ms, self.baseline_ms, self.baseline_name, self.bar, self.passed,
                                        graded_at=lambda ms: (self.value_at(ms), self.describe_value(self.value_at(ms))),
                                        bar_text=self.describe_value(self.bar))
        if self.neighbours is not None:
            lines.append(f"  {'⚑ ' if self.crowded else ''}GPU: {self.neighbours.describe()}"
                         + (f"; measured again after a first timing at {self.describe_value(self.remeasured_from)} "
                            f"beside {self.first_neighbours}" if self.remeasured_because == "crowded" else ""))
        if self.clock is not None and self.clock.readings:
            again = (f"; measured again after a first run at {self.describe_value(self.remeasured_from)} was held down"
                     if self.remeasured_because == "throttled" else "")
            held = (" (held down by heat or the power brake while timed)" if self.throttled else
                    " (at the power cap, as sustained work on this GPU runs, torch's too)" if self.clock.power_capped else "")
            lines.append(f"  clock: {self.clock.describe()}{held}{again}")
        if self.timed_where:
            lines.append(f"  timed: {self.timed_where}")
        lines.append(f"  speedup {self.speedup:.2f}x  ({self.size}; median of {c.rounds} interleaved rounds; "
                     f"{self.gpu})")
        # read back by grader.notebooks.speed_outputs
        lines.append(f"[speed: {json.dumps(self.as_record(), separators=(',', ':'))}]")
        return "\n".join(lines)
