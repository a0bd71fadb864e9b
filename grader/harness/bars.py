"""Pass bars: one data file keyed by exercise, which an instructor can override.

The defaults live in `grader/bars.toml`. `LADDER_BARS=/path/to/file.toml` names an override file
(grader.config); its entries replace the defaults key by key, field by field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from .. import config
from ..errors import LadderError


@dataclass(frozen=True)
class Bar:
    key: str
    bar: float
    baseline: str
    what: str
    graded: bool = True
    calibration: str = ""
    source: str = "grader/bars.toml"


def _read(path_or_text, source: str) -> dict:
    try:
        return tomllib.loads(path_or_text)
    except tomllib.TOMLDecodeError as exc:
        raise LadderError(f"pass-bar file {source} is not valid TOML: {exc}") from None


def load_bars() -> dict[str, Bar]:
    """All bars, defaults merged with the instructor's override file if LADDER_BARS is set."""
    table = _read(resources.files("grader").joinpath("bars.toml").read_text(), "grader/bars.toml")
    sources = {key: "grader/bars.toml" for key in table}
    path = config.bars_override()
    if path is not None:
        if not path.is_file():
            raise LadderError(f"LADDER_BARS={path} does not name a file")
        for key, fields in _read(path.read_text(), str(path)).items():
            table.setdefault(key, {}).update(fields)
            sources[key] = str(path)
    bars = {}
    for key, fields in table.items():
        if "bar" not in fields:
            raise LadderError(f"pass bar {key!r} has no 'bar' value ({sources[key]})")
        try:
            value = float(fields["bar"])
        except (TypeError, ValueError):
            raise LadderError(f"pass bar {key!r} is not a number: {fields['bar']!r}") from None
        if not value > 0:
            raise LadderError(f"pass bar {key!r} must be positive, got {value}")
        bars[key] = Bar(key=key, bar=value, baseline=fields.get("baseline", "torch"),
                        what=fields.get("what", key), graded=bool(fields.get("graded", True)),
                        calibration=fields.get("calibration", ""), source=sources[key])
    return bars


def bar_for(key: str) -> Bar:
    bars = load_bars()
    if key not in bars:
        raise LadderError(f"no pass bar for exercise {key!r}; known: {', '.join(sorted(bars))}")
    return bars[key]
