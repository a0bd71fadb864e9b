"""Pass bars: one data file keyed by exercise, which an instructor can override, with bars for
particular GPU architectures where one family needs its own.

The defaults live in `grader/bars.toml` (its header documents the format). `LADDER_BARS=/path/to/
file.toml` names an override file (grader.config); its entries replace the defaults key by key, field
by field, architecture by architecture.

A bar is of one of two kinds (`kind`, KINDS): a speedup over torch's time measured in the same run (the
default), or a fraction of this GPU's copy ceiling measured in the same run ("copy-ceiling": the bytes the
operation must move over the learner's time, against a device-to-device copy timed in the same rounds;
grader.harness.ceilings.ceiling_fraction). A memory-bound kernel's honest target is the memory itself, so
the second kind is equally hard on every GPU; the first is as hard as torch makes it there.

A bar is looked up for an architecture: by default the one of this process's GPU (or the one
grader.cuda.archs.targeting names), none without a GPU. An exercise's `by_arch` entry for that
architecture replaces its fields. `needs` names what the bar's calibration assumed of the GPU
(capabilities that grader.cuda.capabilities checks by compiling); grader.harness.feasibility
decides from them whether the bar can be graded on a GPU at all.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from .. import config
from ..errors import LadderError

_ARCH = re.compile(r"sm_\d{2,3}")
_FIELDS = ("bar", "kind", "baseline", "what", "graded", "calibration", "needs", "not_gradable", "provisional")
SPEEDUP, COPY_CEILING = "speedup", "copy-ceiling"
# What each kind of bar compares the learner's time with, as the reports say it.
KINDS = {SPEEDUP: "a speedup over the baseline, timed in the same run",
         COPY_CEILING: "a fraction of this GPU's copy ceiling, measured in the same run"}
# A copy-ceiling bar above this is beyond what memory can deliver: a kernel that moves the bytes it must moves
# them no faster than a copy (reads alone run a few percent above it; the too-fast rule allows 1.15).
MAX_FRACTION = 1.0
HERE = object()   # bar_for's default: the architecture compiled for now


@dataclass(frozen=True)
class Bar:
    key: str
    bar: float
    baseline: str       # speedup bars: what the bar is a ratio to; copy-ceiling bars: what is reported beside
    what: str
    graded: bool = True
    kind: str = SPEEDUP
    calibration: str = ""
    source: str = "grader/bars.toml"
    needs: tuple[str, ...] = ()       # capabilities the bar assumes (grader.cuda.capabilities)
    arch: str | None = None           # the architecture whose by_arch entry this bar is, if any
    # Why no bar can be graded here, when a calibration on this architecture found none that separates
    # the solution from the rung below (`ladder calibrate`); grader.harness.feasibility scores it by policy.
    not_gradable: str = ""
    # Not calibrated yet: why, and what will calibrate it. Reports and `ladder doctor` say so; a test
    # (tests/test_records.py) refuses to let a provisional bar ship.
    provisional: str = ""

    @property
    def is_fraction(self) -> bool:
        return self.kind == COPY_CEILING

    def describe(self, value: float | None = None) -> str:
        """The bar (or `value` measured against it) in words: "2.00x torch.add", "0.60 of this GPU's copy ceiling"."""
        v = self.bar if value is None else value
        return f"{v:.2f} of this GPU's copy ceiling" if self.is_fraction else f"{v:.2f}x {self.baseline}"

    @property
    def unit(self) -> str:
        """What follows a figure of this bar's kind: "x" (a speedup) or " of the copy ceiling"."""
        return " of the copy ceiling" if self.is_fraction else "x"


def _read(path_or_text, source: str) -> dict:
    try:
        return tomllib.loads(path_or_text)
    except tomllib.TOMLDecodeError as exc:
        raise LadderError(f"pass-bar file {source} is not valid TOML: {exc}") from None


def _split_archs(table: dict, source: str) -> dict:
    """Each exercise's `by_arch` with keys of several architectures ("sm_86 sm_89") given one entry each."""
    for key, fields in table.items():
        by_arch = fields.get("by_arch")
        if by_arch is None:
            continue
        if not isinstance(by_arch, dict):
            raise LadderError(f"pass bar {key!r}: `by_arch` must be a table of architectures ({source})")
        split: dict[str, dict] = {}
        for names, entry in by_arch.items():
            if not isinstance(entry, dict):
                raise LadderError(f"pass bar {key!r}: by_arch.{names} must be a table ({source})")
            for name in re.split(r"[\s,]+", names.strip()):
                if not _ARCH.fullmatch(name):
                    raise LadderError(f"pass bar {key!r}: {name!r} in by_arch is not an architecture such as "
                                      f"sm_86 ({source})")
                split.setdefault(name, {}).update(entry)
        fields["by_arch"] = split
    return table


def load_table() -> tuple[dict, dict[str, str]]:
    """(the merged table, where each key's entry came from): defaults, then the override file."""
    table = _split_archs(_read(resources.files("grader").joinpath("bars.toml").read_text(), "grader/bars.toml"),
                         "grader/bars.toml")
    sources = {key: "grader/bars.toml" for key in table}
    path = config.bars_override()
    if path is not None:
        if not path.is_file():
            raise LadderError(f"LADDER_BARS={path} does not name a file")
        for key, fields in _split_archs(_read(path.read_text(), str(path)), str(path)).items():
            entry = table.setdefault(key, {})
            for name, value in fields.items():
                if name == "by_arch":
                    for arch, arch_fields in value.items():
                        entry.setdefault("by_arch", {}).setdefault(arch, {}).update(arch_fields)
                else:
                    entry[name] = value
            sources[key] = str(path)
    return table, sources


def _bar(key: str, fields: dict, source: str, arch: str | None) -> Bar:
    unknown = sorted(set(fields) - set(_FIELDS) - {"by_arch"})
    if unknown:
        raise LadderError(f"pass bar {key!r} has unknown field(s) {', '.join(unknown)} ({source}); "
                          f"known: {', '.join(_FIELDS)}, by_arch")
    if "bar" not in fields:
        raise LadderError(f"pass bar {key!r} has no 'bar' value ({source})")
    try:
        value = float(fields["bar"])
    except (TypeError, ValueError):
        raise LadderError(f"pass bar {key!r} is not a number: {fields['bar']!r} ({source})") from None
    if not value > 0:
        raise LadderError(f"pass bar {key!r} must be positive, got {value} ({source})")
    needs = fields.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        raise LadderError(f"pass bar {key!r}: `needs` must be a list of capability names ({source})")
    for name in ("not_gradable", "provisional"):
        if not isinstance(fields.get(name, ""), str):
            raise LadderError(f"pass bar {key!r}: `{name}` must be a sentence saying why ({source})")
    kind = fields.get("kind", SPEEDUP)
    if kind not in KINDS:
        raise LadderError(f"pass bar {key!r}: kind {kind!r} is not a kind of bar ({source}); the kinds are "
                          + "; ".join(f"{k!r}, {meaning}" for k, meaning in KINDS.items()))
    if kind == COPY_CEILING and value > MAX_FRACTION:
        raise LadderError(f"pass bar {key!r}: {value} of the copy ceiling is beyond what memory delivers; a "
                          f"copy-ceiling bar is a fraction of at most {MAX_FRACTION:g} ({source})")
    return Bar(key=key, bar=value, baseline=fields.get("baseline", "torch"), what=fields.get("what", key),
               graded=bool(fields.get("graded", True)), calibration=fields.get("calibration", ""), source=source,
               needs=tuple(needs), arch=arch, not_gradable=fields.get("not_gradable", ""), kind=kind,
               provisional=fields.get("provisional", ""))


def _current_arch() -> str | None:
    from ..cuda.gpu import arch_here

    arch = arch_here()
    return arch.name if arch is not None else None


def load_bars(arch=HERE) -> dict[str, Bar]:
    """All bars for `arch` ("sm_86"; None: the defaults, whatever the GPU; HERE: this GPU's), defaults
    merged with the instructor's override file if LADDER_BARS is set."""
    if arch is HERE:
        arch = _current_arch()
    table, sources = load_table()
    bars = {}
    for key, fields in table.items():
        specific = (fields.get("by_arch") or {}).get(arch) if arch else None
        base = {k: v for k, v in fields.items() if k != "by_arch"}
        bars[key] = _bar(key, {**base, **specific} if specific else base, sources[key],
                         arch if specific else None)
    return bars


def check_override() -> None:
    """Read the override file in force (LADDER_BARS), if any, as every lookup on every architecture would read it,
    and refuse an entry for an exercise the course does not have (a misspelt key would leave the bar the
    instructor meant unchanged, and grade by the default without a word). `ladder grade` calls it before any
    student: read first inside each notebook's checks, a bad file scored every speed cell of the class 0."""
    path = config.bars_override()
    if path is None:
        return
    table, sources = load_table()
    known = _read(resources.files("grader").joinpath("bars.toml").read_text(), "grader/bars.toml")
    unknown = sorted(key for key, source in sources.items() if key not in known)
    if unknown:
        raise LadderError(f"pass-bar file {path}: no exercise {', '.join(map(repr, unknown))} in the course; its "
                          f"exercises are {', '.join(known)}")
    for arch in [None, *sorted({a for fields in table.values() for a in fields.get("by_arch") or {}})]:
        load_bars(arch)


def bar_for(key: str, arch=HERE) -> Bar:
    bars = load_bars(arch)
    if key not in bars:
        raise LadderError(f"no pass bar for exercise {key!r}; known: {', '.join(sorted(bars))}")
    return bars[key]
