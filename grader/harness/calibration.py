"""Calibrating pass bars from measured figures: the recorded rungs (grader/rungs.toml), whether a bar
separates them, the bar proposed from them, and the override file that carries the proposals.

A figure is what the bar's kind judges (grader.harness.bars.KINDS): a speedup over the baseline, or a fraction
of the copy ceiling measured in the same run. The rule is the same for both, since both are larger for a faster
kernel and both are ratios of two times measured together.

The rule a proposal follows (docs/instructors.md, "Calibrating the bars on your GPUs"):
- `high` is the worst figure of the rungs that must clear the bar (the solution's slowest run), `low` the
  best figure of the rungs that must miss it (the rung below's fastest run).
- A bar's margin is how far it sits above `low` (bar / low - 1) and under `high` (high / bar - 1).
- The course's bar is kept where it leaves MARGIN on both sides: a bar that separates with margin is not moved,
  however far its rungs lie apart. (Proposing the midpoint of the two instead, as this rule once did, halved
  5a's bar on an H200, 0.75x to 0.40x, and lowered 1b's from 1.50x to 1.17x, though both separated their rungs
  in every run with room to spare: assets/results/calibration/course-h200x4.)
- Otherwise the proposal is the value nearest the course's bar that leaves MARGIN on both sides (two decimals,
  rounded towards the inside), its margins stated.
- Where no value leaves MARGIN on both sides, a course bar that still judges every run as its rung expects is
  kept, its thinner margins stated; else no bar separates the rungs on this GPU, and the bar is written as not
  gradable there (grader.harness.feasibility scores such a cell by the instructor's policy).
- A bar with no rung below (a stretch goal, most of them reported, not graded) needs MARGIN under the
  solution's worst run only.

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
    # against: grader.calls.trusted), for the record of how far the two lie apart; empty where not kept.
    event_values: tuple[float, ...] = ()
    # Each run's untraced time per call over its kernels' traced busy time (grader.calls.rules
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
    proposed: float | None     # the bar these figures support (the current one kept, or the nearest with margin)
    why_none: str = ""         # where none: why
    kept: bool = False         # the proposal is the current bar

    @property
    def separates(self) -> bool:
        """Whether the current bar judges every run of every rung as the rung expects (no rung timed: no)."""
        judged = [f for f in self.figures if f.rung.expect != "report"]
        return bool(judged) and all(f.as_expected(self.current.bar) == len(f.values) for f in judged)

    @property
    def kind(self) -> str:
        return "graded" if self.current.graded else "reported"

    def bounds(self) -> tuple[float | None, float | None]:
        """(the rung below's fastest run, the solution's slowest): None where there is no such rung."""
        return _bounds(list(self.figures))

    def margins(self, bar: float) -> str:
        """How far `bar` sits under the solution's slowest run and above the rung below's fastest."""
        low, high = self.bounds()
        unit = self.current.unit
        parts = [] if high is None else [f"{high / bar - 1:.1%} under the solution's slowest run ({high:.3f}{unit})"]
        parts.append("no rung below it" if low is None else
                     f"{bar / low - 1:.1%} above the rung below's fastest ({low:.3f}{unit})")
        return ", ".join(parts)

    def verdict(self) -> str:
        """What the calibration proposes for this bar, and the margins that back it."""
        if self.proposed is None:
            return self.why_none
        unit = self.current.unit
        if self.kept:
            thin = self.thin()
            return (f"keeps {self.proposed:.2f}{unit}: {self.margins(self.proposed)}"
                    + (f" (under {MARGIN:.0%} on a side, and no bar leaves {MARGIN:.0%} on both; it judged every run "
                       "as its rung expects)" if thin else ""))
        return (f"proposes {self.proposed:.2f}{unit}, the nearest to {self.current.bar:.2f}{unit} that leaves "
                f"{MARGIN:.0%} each side: {self.margins(self.proposed)}")

    def thin(self) -> bool:
        """Whether the proposed bar leaves less than MARGIN on a side."""
        low, high = self.bounds()
        bar = self.proposed
        return bar is not None and high is not None and (
            high < bar * (1 + MARGIN) * (1 - 1e-9) or (low is not None and bar < low * (1 + MARGIN) * (1 - 1e-9)))

    def calibration(self, gpu: str, runs: int) -> str:
        """The override's calibration string: the GPU, the runs and the figures."""
        rungs = "; ".join(f"{f.rung.label} {f.range()}" for f in self.figures)
        return f"{gpu}, {runs} runs a rung (ladder calibrate): {rungs}; {self.verdict()}"


def _bounds(figures: list[Figures]) -> tuple[float | None, float | None]:
    passing = [f.worst for f in figures if f.rung.expect == "pass"]
    failing = [f.worst for f in figures if f.rung.expect == "fail"]
    return (max(failing) if failing else None), (min(passing) if passing else None)


def propose(current: Bar, figures: list[Figures], margin: float = MARGIN) -> Proposal:
    """The bar proposed for `current.key` from the rungs' figures (the rule in this module's docstring)."""
    low, high = _bounds(figures)
    if high is None:
        return Proposal(current.key, current, tuple(figures), None, "no recorded rung must clear this bar")
    bar, unit = current.bar, current.unit
    if high >= bar * (1 + margin) and (low is None or bar >= low * (1 + margin)):
        return Proposal(current.key, current, tuple(figures), bar, kept=True)
    floor, ceiling = (low * (1 + margin) if low is not None else 0.0), high / (1 + margin)
    if floor <= ceiling:
        return Proposal(current.key, current, tuple(figures), _inside(min(max(bar, floor), ceiling), floor, ceiling))
    kept = Proposal(current.key, current, tuple(figures), bar, kept=True)
    if kept.separates:
        return kept
    widest = (f"; the widest any bar leaves is {math.sqrt(high / low) - 1:.1%} each side, at "
              f"{math.sqrt(low * high):.3f}{unit}") if high > low else ""
    return Proposal(current.key, current, tuple(figures), None,
                    f"not gradable here: the solution's slowest run ({high:.3f}{unit}) is not {margin:.0%} above a bar "
                    f"that is {margin:.0%} above the rung below's fastest ({low:.3f}{unit}){widest}, and the course's "
                    f"{bar:.2f}{unit} judges {sum(f.as_expected(bar) for f in figures if f.rung.expect != 'report')} of "
                    f"{sum(len(f.values) for f in figures if f.rung.expect != 'report')} runs as their rungs expect")


def _inside(value: float, floor: float, ceiling: float) -> float:
    """`value` to two decimals (bars.toml's), rounded towards the inside of [floor, ceiling]; to three where the
    range is narrower than a hundredth."""
    for places in (2, 3):
        scale = 10 ** places
        scaled = round(value * scale, 6)   # 0.5 * 1.1 is 0.55000000000000004, which must round to 0.55
        rounded = math.floor(scaled) / scale if value >= ceiling else \
            math.ceil(scaled) / scale if value <= floor else round(value, places)
        if floor - 1e-9 <= rounded <= ceiling + 1e-9:
            return rounded
    return value


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
    lines = [f"{p.key} ({p.kind}): bar {bar} ({p.current.source}{note}) "
             f"{'separates' if p.separates else 'does NOT separate'} the rungs on this GPU"]
    for f in p.figures:
        if f.rung.expect == "report":
            above = sum(s >= p.current.bar for s in f.values)
            lines.append(f"  report  {f.rung.label}: {f.spread()}, {above}/{len(f.values)} at or above "
                         f"{bar} (reported; the bar does not judge it)")
            continue
        lines.append(f"  {f.rung.expect:4}  {f.rung.label}: {f.spread()}, "
                     f"{f.as_expected(p.current.bar)}/{len(f.values)} {f.rung.expect} at {bar}")
    lines.append(f"  {p.verdict()}")
    return "\n".join(lines)
