"""The recorded signature of every rung, profiled on an H100: what learners without a GPU, without
Nsight Compute or without counter access see, and the rungs a learner's own profile is shown beside.

Layout: assets/profiles/<GPU>/index.json (per exercise: the rungs in ladder order with a line on each,
the size profiled, the GPU, ncu's version and the command that recorded them) and
assets/profiles/<GPU>/<exercise>/<rung>.csv (ncu's raw CSV page of that rung's launch).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

from ..errors import LadderError
from .report import read_raw_csv
from .signature import Signature, signature_from_rows

PROFILES = Path(__file__).resolve().parents[2] / "assets" / "profiles"
GPU = "H100"


def available(gpu: str = GPU) -> bool:
    return (PROFILES / gpu / "index.json").is_file()


def recorded_on(exercise_key: str) -> str:
    """The GPU whose recordings hold `exercise_key`: the H100's where it has it (every chapter up to 8), else the
    first other GPU's that does (chapter 10's rungs are recorded on an H200); GPU when none does."""
    for gpu in [GPU] + sorted(p.name for p in PROFILES.glob("*") if p.name != GPU):
        if available(gpu) and exercise_key in index(gpu)["exercises"]:
            return gpu
    return GPU


def has(exercise_key: str, rung_names, gpu: str = GPU) -> bool:
    """Whether `gpu`'s recordings hold every one of `rung_names` of `exercise_key`."""
    if not available(gpu) or exercise_key not in index(gpu)["exercises"]:
        return False
    return all((PROFILES / gpu / exercise_key / f"{r}.csv").is_file() for r in rung_names) and \
        set(rung_names) <= set(rungs(exercise_key, gpu))


@cache
def index(gpu: str = GPU) -> dict:
    path = PROFILES / gpu / "index.json"
    if not path.is_file():
        raise LadderError(f"no recorded profiles for {gpu}: {path} is missing")
    return json.loads(path.read_text())


def exercises(gpu: str = GPU) -> list[str]:
    return list(index(gpu)["exercises"])


def rungs(exercise_key: str, gpu: str = GPU) -> list[str]:
    entry = index(gpu)["exercises"].get(exercise_key)
    if entry is None:
        raise LadderError(f"no recorded profiles for exercise {exercise_key!r}; recorded: {', '.join(exercises(gpu))}")
    return [r["rung"] for r in entry["rungs"]]


def describe(exercise_key: str, rung: str, gpu: str = GPU) -> str:
    for r in index(gpu)["exercises"][exercise_key]["rungs"]:
        if r["rung"] == rung:
            return r["what"]
    raise LadderError(f"exercise {exercise_key} has no recorded rung {rung!r}; it has {', '.join(rungs(exercise_key, gpu))}")


@cache
def load(exercise_key: str, rung: str, gpu: str = GPU) -> Signature:
    describe(exercise_key, rung, gpu)   # a clear error for an unknown rung
    path = PROFILES / gpu / exercise_key / f"{rung}.csv"
    return signature_from_rows(read_raw_csv(path.read_text()), exercise_key, rung)


def _cell(v: float, fmt: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


COLUMNS = (("DRAM%", "dram_pct", "{:.0f}"), ("L2 hit%", "l2_hit_pct", "{:.0f}"),
           ("ld sect/req", "ld_sectors_per_request", "{:.1f}"), ("st sect/req", "st_sectors_per_request", "{:.1f}"),
           ("smem ld ways", "shared_ld_ways", "{:.1f}"), ("occupancy%", "achieved_occupancy_pct", "{:.0f}"),
           ("waves", "waves_per_sm", "{:.2f}"),
           ("limiter", "occupancy_limiter", "{}"), ("regs", "registers_per_thread", "{}"),
           ("tensor%", "tensor_pipe_pct", "{:.0f}"), ("us", "time_us", "{:,.0f}"))


def table_rows(sigs: list[Signature]) -> list[list[str]]:
    rows = []
    for s in sigs:
        stall = s.top_stalls[0][0] if s.top_stalls else "n/a"
        rows.append([s.rung] + [_cell(getattr(s, attr), fmt) for _, attr, fmt in COLUMNS] + [stall])
    return rows


def table(exercise_key: str, gpu: str = GPU, extra: list[Signature] = (), only: tuple[str, ...] = ()) -> str:
    """One line per recorded rung (`only` those, in that order) and per signature in `extra` (e.g. the
    learner's), as Markdown."""
    names = list(only) or rungs(exercise_key, gpu)
    sigs = [load(exercise_key, r, gpu) for r in names] + list(extra)
    head = ["rung"] + [c[0] for c in COLUMNS] + ["top stall"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(sigs)]
    entry = index(gpu)["exercises"][exercise_key]
    lines.append(f"\nRecorded on {entry['gpu']} at {entry['size']} with {index(gpu)['ncu']}.")
    return "\n".join(lines)
