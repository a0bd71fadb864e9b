"""Calibrating pass bars from measured figures: the recorded rungs (grader/rungs.toml), whether a bar
separates them, the bar proposed from them, and the override file that carries the proposals.

A figure is what the bar's kind judges (grader.harness.bars.KINDS): a speedup over the baseline, or a fraction
of the copy ceiling measured in the same run. The rule is the same for both, since both are larger for a faster
kernel and both are ratios of two times measured together.

The rule a proposal follows (docs/instructors.md, "Calibrating the bars on your GPUs"):
- `high` is the worst figure of the rungs that must clear the bar (the solution's slowest run), `low` the
  best figure of the rungs that must miss it (the rung below's fastest run).
- The proposed bar is midway between them in log space, sqrt(low * high): as many times above the rung
  below as it is under the solution.
- It is accepted only when that leaves MARGIN on both sides, i.e. high >= low * (1 + MARGIN)^2. Otherwise
  (the figures overlap or nearly touch) no bar separates the rungs on this GPU, and the bar is written as
  not gradable there (grader.harness.feasibility scores such a cell by the instructor's policy).
- A bar with no rung below (a stretch goal) is proposed MARGIN under the solution's worst run.

Timing happens elsewhere (grader.notebooks.calibrate, grader.classgrade.calibrate): this module only does
the arithmetic, so that the CPU tests can check it on recorded figures.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass
from importlib import resources

from ..errors import LadderError
from .bars import Bar

MARGIN = 0.10   # room each side of a proposed bar: 10% covers the run-to-run spread of every recorded GPU
_RUNG_FIELDS = {"label", "bar", "expect", "submission", "exercise", "launcher"}
EXPECTS = ("pass", "fail", "report")


@dataclass(frozen=True)
class Rung:
    chapter: str      # "ch05"
    label: str
    bar: str          # the bars.toml key
    expect: str       # "pass", "fail", or "report" (timed beside the others; the bar does not judge it)
    submission: str   # "solution", or a module of tests/submissions/<chapter>/
    exercise: str     # expression over the chapter module: the Exercise timed
    launcher: str     # expression over the notebook's names: the function timed


def rungs(chapters: list[str] | None = None) -> list[Rung]:
    """The recorded rungs of grader/rungs.toml, of the chapters named ("ch01", ...) or of all of them."""
    table = tomllib.loads(resources.files("grader").joinpath("rungs.toml").read_text())
    out = []
    for chapter, entries in table.items():
        if chapters is not None and chapter not in chapters:
            continue
        for entry in entries:
            if set(entry) != _RUNG_FIELDS or entry["expect"] not in EXPECTS:
                raise LadderError(f"grader/rungs.toml: a rung of {chapter} needs exactly the fields "
                                  f"{', '.join(sorted(_RUNG_FIELDS))}, with expect one of {', '.join(EXPECTS)}: {entry}")
            out.append(Rung(chapter, **entry))
    return out


@dataclass(frozen=True)
class Figures:
    """One rung's figures on one GPU, one per run: the speedups, or the fractions of the copy ceiling, that its
    bar judges (`unit`: "x" or " of the copy ceiling", grader.harness.bars.Bar.unit)."""
    rung: Rung
    values: tuple[float, ...]
    # The same runs by the CUDA events recorded where the calls ran (a claim the trusted time is checked
    # against: grader.isolation.trusted), for the record of how far the two lie apart; empty where not kept.
    event_values: tuple[float, ...] = ()
    # Each run's untraced time per call over its kernels' traced busy time (grader.isolation.rules
    # enforce_traced_timing fails a run below its bound): how near honest kernels come to that rule.
    traced_ratios: tuple[float, ...] = ()
    # Each run's timing rounds and the seconds they took (grader.harness.timing.compare stops at a spread of
    # 2%, a settled verdict or its time budget): where a rung's calibration time goes.
    rounds: tuple[int, ...] = ()
    timing_s: tuple[float, ...] = ()
    unit: str = "x"

    @property
    def worst(self) -> float:
        """The run nearest the bar: the slowest for a rung that must pass, the fastest for one that must fail."""
        return min(self.values) if self.rung.expect == "pass" else max(self.values)

    def range(self) -> str:
        return f"{min(self.values):.3f}-{max(self.values):.3f}{self.unit}"

    def spread(self) -> str:
        return (f"{self.range()} (median {statistics.median(self.values):.3f}{self.unit}, {len(self.values)} runs)")

    def as_expected(self, bar: float) -> int:
        """How many runs the bar judges as this rung expects (a speed cell passes at a figure >= bar)."""
        return sum((s >= bar) == (self.rung.expect == "pass") for s in self.values)


@dataclass(frozen=True)
class Proposal:
    key: str
    current: Bar
    figures: tuple[Figures, ...]
    proposed: float | None     # None: no bar separates the rungs here (or none must pass it)
    why_none: str = ""

    @property
    def separates(self) -> bool:
        """Whether the current bar judges every run of every rung as the rung expects (no rung timed: no)."""
        judged = [f for f in self.figures if f.rung.expect != "report"]
        return bool(judged) and all(f.as_expected(self.current.bar) == len(f.values) for f in judged)

    def calibration(self, gpu: str, runs: int) -> str:
        """The override's calibration string: the GPU, the runs and the figures."""
        rungs = "; ".join(f"{f.rung.label} {f.range()}" for f in self.figures)
        how = (f"proposed {self.proposed:.2f}{self.current.unit}, midway in log space with {MARGIN:.0%} margin each side"
               if self.proposed is not None else self.why_none)
        return f"{gpu}, {runs} runs a rung (ladder calibrate): {rungs}; {how}"


def propose(current: Bar, figures: list[Figures], margin: float = MARGIN) -> Proposal:
    """The bar proposed for `current.key` from the rungs' figures (the rule in this module's docstring)."""
    passing = [f for f in figures if f.rung.expect == "pass"]
    failing = [f for f in figures if f.rung.expect == "fail"]
    if not passing:
        return Proposal(current.key, current, tuple(figures), None, "no recorded rung must clear this bar")
    high = min(f.worst for f in passing)
    if not failing:
        return Proposal(current.key, current, tuple(figures), _two_places(high / (1 + margin)))
    low = max(f.worst for f in failing)
    if high < low * (1 + margin) ** 2:
        return Proposal(current.key, current, tuple(figures), None,
                        f"not gradable here: the solution's slowest run ({high:.3f}{current.unit}) is not {margin:.0%} "
                        f"above a bar that is {margin:.0%} above the rung below's fastest ({low:.3f}{current.unit})")
    return Proposal(current.key, current, tuple(figures), _two_places(math.sqrt(low * high)))


def _two_places(value: float) -> float:
    # Bars in bars.toml are written to two decimals; at least a 10% margin each side survives the rounding.
    return round(value, 2)


def override_toml(proposals: list[Proposal], arch: str, gpu: str, runs: int) -> str:
    """A bars override file (LADDER_BARS, `ladder grade --bars`) holding the proposals as `by_arch` entries
    for `arch`, so that the bars of every other GPU stay as they were."""
    lines = [f"# Pass bars calibrated by `ladder calibrate` on {gpu} ({arch}), {runs} runs a rung.",
             "# Use it with `export LADDER_BARS=THIS_FILE` or `ladder grade --bars THIS_FILE`.", ""]
    for p in proposals:
        lines.append(f'["{p.key}".by_arch.{arch}]')
        lines.append(f"bar = {p.proposed if p.proposed is not None else p.current.bar}")
        if p.current.provisional:   # calibrated now, on this architecture: no longer provisional here
            lines.append('provisional = ""')
        if p.proposed is None:
            lines.append(f"not_gradable = {_quote(p.why_none)}")
        lines.append(f"calibration = {_quote(p.calibration(gpu, runs))}")
        lines.append("")
    return "\n".join(lines)


def _quote(text: str) -> str:
    # A TOML basic string: tomllib reads TOML but nothing in the standard library writes it.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def report(p: Proposal) -> str:
    """What `ladder calibrate` prints for one bar."""
    bar = f"{p.current.bar:.2f}{p.current.unit}"
    note = f"; provisional until now: {p.current.provisional}" if p.current.provisional else ""
    lines = [f"{p.key}: bar {bar} ({p.current.source}{note}) "
             f"{'separates' if p.separates else 'does NOT separate'} the rungs on this GPU"]
    for f in p.figures:
        if f.rung.expect == "report":
            above = sum(s >= p.current.bar for s in f.values)
            lines.append(f"  report  {f.rung.label}: {f.spread()}, {above}/{len(f.values)} at or above "
                         f"{bar} (reported; the bar does not judge it)")
            continue
        lines.append(f"  {f.rung.expect:4}  {f.rung.label}: {f.spread()}, "
                     f"{f.as_expected(p.current.bar)}/{len(f.values)} {f.rung.expect} at {bar}")
    lines.append(f"  proposed bar: {p.proposed:.2f}{p.current.unit}" if p.proposed is not None else f"  {p.why_none}")
    return "\n".join(lines)
