"""Nsight Compute's raw CSV page read into one dict of metrics per kernel.

Why the CSV page and not `ncu_report` (Nsight Compute's Python report interface): `ncu_report` is
not on PyPI, it ships only inside an Nsight Compute install, and neither CI nor most learners'
machines have one; the raw page (`ncu --import R.ncu-rep --csv --page raw`) is plain text that can
be recorded in the repository, diffed, and read back with the standard library anywhere. The
.ncu-rep is kept beside it for Nsight Compute's own UI.

The page is a header row of metric names, a row of units, then one row per profiled kernel. Numbers
carry thousands separators ("16,378,659"). ncu and the profiled program may print lines around the
table when it is written to stdout (`==PROF==`, `==WARNING==`, the program's own output): only the
table is read.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

# Units ncu prints, to one base unit each: bytes, microseconds, bytes per second.
_SCALE = {
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6,
    "byte/s": 1.0, "Kbyte/s": 1e3, "Mbyte/s": 1e6, "Gbyte/s": 1e9, "Tbyte/s": 1e12,
    "Kbyte/block": 1e3, "byte/block": 1.0,
}


@dataclass(frozen=True)
class KernelRow:
    """One profiled kernel: its name, launch shape, and every metric as a number in base units
    (bytes, microseconds, bytes per second; other units as ncu printed them)."""
    name: str
    grid: tuple
    block: tuple
    metrics: dict = field(default_factory=dict)
    units: dict = field(default_factory=dict)
    text: dict = field(default_factory=dict)     # the columns that are not numbers (device name, ...)

    def get(self, name: str) -> float:
        """The metric's value, or NaN when this profile does not have it (never 0: a missing counter
        is not a measured zero)."""
        return self.metrics.get(name, math.nan)


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _shape(text: str) -> tuple:
    parts = [p.strip() for p in text.strip().strip("()").split(",") if p.strip()]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        return ()


def read_raw_csv(text: str) -> list[KernelRow]:
    """Every kernel of a raw CSV page. Raises ValueError when the text holds no such table."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no Nsight Compute raw CSV table here (no header row starting with \"ID\")")
    table = [line for line in lines[start:] if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(table))))
    header, units, data = rows[0], rows[1], rows[2:]
    kernels = []
    for row in data:
        metrics, unit_of, text_cols = {}, {}, {}
        for name, unit, value in zip(header, units, row):
            number = _number(value)
            if number is None:
                text_cols[name] = value
                continue
            metrics[name] = number * _SCALE.get(unit, 1.0)
            unit_of[name] = unit
        kernels.append(KernelRow(name=row[header.index("Kernel Name")], grid=_shape(row[header.index("Grid Size")]),
                                 block=_shape(row[header.index("Block Size")]), metrics=metrics, units=unit_of,
                                 text=text_cols))
    return kernels
