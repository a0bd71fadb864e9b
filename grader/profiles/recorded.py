"""The recorded signature of every rung, profiled on an H100 (chapter 9's, for FP8, and chapter 10's on an H200):
what learners without a GPU, without Nsight Compute or without counter access see, and the rungs a learner's own
profile is shown beside.
Some diagnose exercises read rungs recorded on another GPU (assets/profiles/H200/), named by their case.

Layout: assets/profiles/<GPU>/index.json (per exercise: the rungs in ladder order with a line on each,
the size profiled, the GPU, ncu's version and the command that recorded them),
assets/profiles/<GPU>/<exercise>/<rung>.csv (ncu's raw CSV page of that rung's launch) and, for a rung
recorded with its calls back to back under a device trace, <rung>.trace.json beside it
(grader.profiling.timeline's report).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

from ..errors import LadderError
from .report import read_raw_csv
from .signature import Signature, signature_from_rows, with_trace

PROFILES = Path(__file__).resolve().parents[2] / "assets" / "profiles"
GPU = "H100"
# The folders of assets/profiles/, in the order an exercise's rungs are looked for: chapters 1 to 8 were recorded
# on an H100, chapters 9 (FP8) and 10 on an H200.
GPUS = (GPU, "H200")


def _present() -> list[str]:
    return [g for g in GPUS if (PROFILES / g / "index.json").is_file()]


def gpu_of(exercise_key: str) -> str:
    """The folder whose index records `exercise_key` (the first of GPUS that does), else GPU."""
    for gpu in _present():
        if exercise_key in index(gpu)["exercises"]:
            return gpu
    return GPU


def available(gpu: str | None = None) -> bool:
    return (PROFILES / gpu / "index.json").is_file() if gpu else bool(_present())


def has(exercise_key: str, rung_names, gpu: str | None = None) -> bool:
    """Whether `gpu`'s recordings (default: those of the GPU that recorded the exercise) hold every one of
    `rung_names` of `exercise_key`."""
    gpu = gpu or gpu_of(exercise_key)
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


def exercises(gpu: str | None = None) -> list[str]:
    """The exercises recorded on `gpu`, or on any GPU of GPUS."""
    found: list[str] = []
    for g in [gpu] if gpu else _present():
        found += [e for e in index(g)["exercises"] if e not in found]
    return found


def exercise_index(exercise_key: str) -> dict:
    """The index of the GPU that recorded `exercise_key`."""
    return index(gpu_of(exercise_key))


def rungs(exercise_key: str, gpu: str | None = None) -> list[str]:
    gpu = gpu or gpu_of(exercise_key)
    entry = index(gpu)["exercises"].get(exercise_key)
    if entry is None:
        raise LadderError(f"no recorded profiles for exercise {exercise_key!r}; recorded: {', '.join(exercises(gpu))}")
    return [r["rung"] for r in entry["rungs"]]


def describe(exercise_key: str, rung: str, gpu: str | None = None) -> str:
    gpu = gpu or gpu_of(exercise_key)
    for r in index(gpu)["exercises"][exercise_key]["rungs"]:
        if r["rung"] == rung:
            return r["what"]
    raise LadderError(f"exercise {exercise_key} has no recorded rung {rung!r}; it has {', '.join(rungs(exercise_key, gpu))}")


@cache
def load(exercise_key: str, rung: str, gpu: str | None = None) -> Signature:
    gpu = gpu or gpu_of(exercise_key)
    describe(exercise_key, rung, gpu)   # a clear error for an unknown rung
    path = PROFILES / gpu / exercise_key / f"{rung}.csv"
    sig = signature_from_rows(read_raw_csv(path.read_text()), exercise_key, rung)
    trace = path.with_suffix(".trace.json")
    return with_trace(sig, json.loads(trace.read_text())["trace"]) if trace.is_file() else sig


def _cell(v: float, fmt: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


COLUMNS = (("DRAM%", "dram_pct", "{:.0f}"), ("L2 hit%", "l2_hit_pct", "{:.0f}"),
           ("ld sect/req", "ld_sectors_per_request", "{:.1f}"), ("st sect/req", "st_sectors_per_request", "{:.1f}"),
           ("smem ld ways", "shared_ld_ways", "{:.1f}"), ("occupancy%", "achieved_occupancy_pct", "{:.0f}"),
           ("waves", "waves_per_sm", "{:.2f}"),
           ("limiter", "occupancy_limiter", "{}"), ("regs", "registers_per_thread", "{}"),
           ("tensor%", "tensor_pipe_pct", "{:.0f}"), ("us", "time_us", "{:,.0f}"))


# Shown only where a rung of the table has them: a launcher of several kernels, and calls traced back to back.
LAUNCH_COLUMNS = (("kernels", "launch_kernels", "{}"), ("all us", "launch_time_us", "{:,.0f}"),
                  ("all DRAM MB", "launch_dram_mb", "{:,.0f}"))
TRACE_COLUMNS = (("call us", "call_us", "{:,.0f}"), ("GPU busy%", "gpu_busy_pct", "{:.0f}"),
                 ("as a graph us", "graph_call_us", "{:,.0f}"))
# The fp32 work beside a product on the tensor cores: a softmax, an epilogue, or the promotions of a block-scaled
# GEMM (chapter 9's 9b, whose rungs differ in it fourfold). Where nothing runs on the tensor cores it is the
# product itself, or nothing, and says no more than the time does.
FP32_COLUMNS = (("fp32 GFLOP", "fp32_gflop", "{:,.1f}"),)


def columns(sigs: list[Signature]) -> tuple:
    """COLUMNS; the fp32 work where a rung of `sigs` runs on the tensor cores and does some; the launch's and the
    trace's where any of `sigs` has them."""
    extra = FP32_COLUMNS if any(s.tensor_pipe_pct >= 1 and s.fp32_flops > 0 for s in sigs) else ()
    if any(s.launch_kernels > 1 for s in sigs):
        extra += LAUNCH_COLUMNS
    if any(not math.isnan(s.gpu_busy_pct) for s in sigs):
        extra += TRACE_COLUMNS
    return COLUMNS + extra


def stall_cell(sig: Signature) -> str:
    """The top stall; where others tie with it (Signature.leading_stalls), all of them: "a ≈ b"."""
    return " ≈ ".join(sig.leading_stalls) or "n/a"


def table_rows(sigs: list[Signature], shown: tuple = COLUMNS) -> list[list[str]]:
    return [[s.rung] + [_cell(getattr(s, attr), fmt) for _, attr, fmt in shown] + [stall_cell(s)] for s in sigs]


def table(exercise_key: str, gpu: str | None = None, extra: list[Signature] = (), only: tuple[str, ...] = ()) -> str:
    """One line per recorded rung (`only` those, in that order) and per signature in `extra` (e.g. the
    learner's), as Markdown."""
    gpu = gpu or gpu_of(exercise_key)
    names = list(only) or rungs(exercise_key, gpu)
    sigs = [load(exercise_key, r, gpu) for r in names] + list(extra)
    shown = columns(sigs)
    head = ["rung"] + [c[0] for c in shown] + ["top stall"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(sigs, shown)]
    entry = index(gpu)["exercises"][exercise_key]
    sizes = {r["rung"]: r.get("size") for r in entry["rungs"] if r["rung"] in names}
    at = (entry["size"] if len(set(sizes.values())) <= 1
          else "; ".join(f"{rung} at {size}" for rung, size in sizes.items()))
    lines.append(f"\nRecorded on {entry['gpu']} at {at} with {index(gpu)['ncu']}.")
    return "\n".join(lines)
