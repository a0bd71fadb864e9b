"""Where one student's grading time went, read back from their autograded notebook.

nbclient stamps every cell it runs (`metadata.execution`: busy, then idle, as ISO times) and
grader.notebooks.nbexec stamps every isolated check (`metadata.ladder`: the check's seconds, and of
them the worker's start with the learner's cells, and its CPU time; whether it ran ahead of the notebook,
beside other checks (grader.isolation.ahead), how long it waited for a slot of the machine's
(grader.isolation.slots), and how long the notebook waited for its verdict). Checks ahead overlap
each other and the notebook's own cells, so their seconds add up to more than the wall time; the waits
do not. Nothing is timed twice: this only reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .. import config
from ..isolation.hung import ANSWERED_AT_ONCE
from ..notebooks.speed_outputs import speed_record


@dataclass
class CellTime:
    index: int
    name: str          # grade_id, or "cell N" with the first line of its source
    seconds: float
    kind: str          # "check" (an isolated graded test), "cell" (run in the notebook's kernel)
    load_seconds: float = 0.0
    ahead: bool = False          # a check whose verdict came from ahead of the notebook
    wait_seconds: float | None = None   # how long the notebook waited for a check's verdict
    cpu_seconds: float = 0.0     # a check's CPU time (its verifier and worker)
    slot_wait_seconds: float = 0.0   # how long a check ahead waited for a slot of the machine's (grader.isolation.slots)


@dataclass
class Breakdown:
    cells: list[CellTime] = field(default_factory=list)

    @property
    def kernel_seconds(self) -> float:
        return sum(c.seconds for c in self.cells if c.kind == "cell")

    @property
    def check_seconds(self) -> float:
        return sum(c.seconds for c in self.cells if c.kind == "check")

    @property
    def load_seconds(self) -> float:
        return sum(c.load_seconds for c in self.cells if c.kind == "check")

    @property
    def wait_seconds(self) -> float:
        """What the checks cost the notebook's run: their time, less what ran ahead while it did other work."""
        return sum(c.seconds if c.wait_seconds is None else c.wait_seconds for c in self.cells if c.kind == "check")

    @property
    def check_cpu_seconds(self) -> float:
        return sum(c.cpu_seconds for c in self.cells if c.kind == "check")

    @property
    def slot_wait_seconds(self) -> float:
        return sum(c.slot_wait_seconds for c in self.cells if c.kind == "check")

    def top(self, n: int = 8) -> list[CellTime]:
        return sorted(self.cells, key=lambda c: -c.seconds)[:n]

    def as_dict(self) -> dict:
        return {"kernel_seconds": round(self.kernel_seconds, 2), "check_seconds": round(self.check_seconds, 2),
                "check_load_seconds": round(self.load_seconds, 2), "check_wait_seconds": round(self.wait_seconds, 2),
                "check_cpu_seconds": round(self.check_cpu_seconds, 2), "slot_wait_seconds": round(self.slot_wait_seconds, 2),
                "cells": [c.__dict__ for c in self.cells]}


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def breakdown(nb) -> Breakdown:
    """The time of every code cell of an executed notebook (an nbformat node or a dict)."""
    out = Breakdown()
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {})
        gid = meta.get("nbgrader", {}).get("grade_id")
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source   # as stored on disk, or as nbformat reads it
        first = next((line for line in source.splitlines() if line.strip()), "")[:60]
        name = gid or f"cell {index + 1}: {first}"
        checked = meta.get("ladder", {})
        if "check_seconds" in checked:
            wait = checked.get("wait_seconds")
            out.cells.append(CellTime(index, name, float(checked["check_seconds"]), "check",
                                      float(checked.get("load_seconds", 0.0)), bool(checked.get("ahead", False)),
                                      None if wait is None else float(wait), float(checked.get("cpu_seconds", 0.0)),
                                      float(checked.get("slot_wait_seconds", 0.0))))
            continue
        stamps = meta.get("execution", {})
        start = stamps.get("iopub.status.busy") or stamps.get("iopub.execute_input")
        end = stamps.get("iopub.status.idle") or stamps.get("shell.execute_reply")
        if start and end:
            out.cells.append(CellTime(index, name, max(0.0, (_stamp(end) - _stamp(start)).total_seconds()), "cell"))
    return out


def student_split(executed: bytes | None, seconds: float, own_cpu_seconds: float, cpus: int, load_start: float,
                  load_end: float, built: dict) -> dict:
    """Where one student's `seconds` on a worker went, for the journal (grader.classgrade.journal) and the
    summary's longest students (grader.classgrade.progress): the notebook's own cells, the checks (their sum,
    their CPU time, what the notebook waited for them, their wait for a slot of the machine's), the CPU time of
    the whole grading against its wall time and the CPUs it could use, the machine's load, what compiled and
    autotuned, and what hung. CPU seconds well below wall seconds times the CPUs it ran on, with a high load,
    is a student waiting for CPUs that others hold."""
    import json

    split = {"seconds": round(seconds, 2), "cpus": cpus, "load_start": round(load_start, 2),
             "load_end": round(load_end, 2), "compiled_kernels": built.get("kernels", 0),
             "autotune_results": built.get("autotuned", 0)}
    own = own_cpu_seconds
    if executed is not None:
        nb = json.loads(executed)
        times = breakdown(nb)
        meta = nb.get("metadata", {}).get("ladder", {})
        ahead = meta.get("checks_ahead", {})
        split.update(kernel_seconds=round(times.kernel_seconds, 2), check_seconds=round(times.check_seconds, 2),
                     check_cpu_seconds=round(times.check_cpu_seconds, 2),
                     # the checks' workers starting (process, imports, CUDA, the learner's cells): where a machine
                     # whose GPUs are all busy at once would show a start-up that its processes share
                     check_load_seconds=round(times.load_seconds, 2),
                     check_wait_seconds=round(times.wait_seconds, 2), slot_wait_seconds=round(times.slot_wait_seconds, 2),
                     checks_at_once=ahead.get("at_once", 1), machine_slots=ahead.get("machine_slots"),
                     hung=list(meta.get("hung", [])),
                     timed_out=[c.name for c in times.cells if _timed_out(nb["cells"][c.index])],
                     answered_at_once=[c.name for c in times.cells if _answered_at_once(nb["cells"][c.index])],
                     longest=[[c.name, round(c.seconds, 1)] for c in times.top(3)],
                     speed_timing=speed_timing(nb))
        # the rest of the wall time: nbgrader's autograde around the notebook, the kernel's start, the workspace
        split["around_notebook_seconds"] = round(max(0.0, seconds - times.kernel_seconds - times.wait_seconds), 2)
        own += times.check_cpu_seconds
    split["cpu_seconds"] = round(own, 2)
    return split


def speed_timing(nb: dict) -> list[list]:
    """[grade_id, rounds, seconds, stopped] of each speed cell's comparison, from the `[speed: {...}]` record its
    report ends with (SpeedResult.as_record): how long the interleaved rounds ran, which a busy machine
    stretches, and what ended them ("spread", "verdict", "budget", "rounds"; None in records older than it)."""
    out = []
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if not gid or cell.get("cell_type") != "code":
            continue
        record = speed_record(cell)
        if record and record.get("timing_s") is not None:
            out.append([gid, record.get("rounds"), record["timing_s"], record.get("stopped")])
    return out


def _to_budget(entry: list) -> bool:
    """A speed_timing entry whose rounds ran the whole budget (a record without `stopped`: by its seconds)."""
    stopped = entry[3] if len(entry) > 3 else None
    return stopped == "budget" if stopped else entry[2] >= config.SPEED_ROUND_BUDGET_S


def _errors(cell) -> list[dict]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _timed_out(cell) -> bool:
    return any("[reason: timed-out]" in str(o.get("evalue", "")) or o.get("ename") == "CellTimeoutError"
               for o in _errors(cell))


def _answered_at_once(cell) -> bool:
    """A time-out given at once, without waiting, because the function it calls hung in an earlier check
    (grader.isolation.hung)."""
    return any(ANSWERED_AT_ONCE in str(o.get("evalue", "")) for o in _errors(cell))


def reasons(split: dict) -> list[str]:
    """Why a student took long, in words, from their split: hung, compiled or autotuned much, waited for CPUs."""
    out = []
    if split.get("hung") or split.get("timed_out"):
        names = ", ".join(split.get("hung") or []) or "a cell"
        at_once = len(split.get("answered_at_once", []))
        waited = len(split.get("timed_out", [])) - at_once
        out.append(f"hung ({names}; {waited} cell(s) waited out the time limit"
                   + (f", {at_once} more failed at once as timed out)" if at_once else ")"))
    if split.get("compiled_kernels"):
        out.append(f"compiled {split['compiled_kernels']} kernel(s)")
    if split.get("autotune_results"):
        out.append(f"autotuned {split['autotune_results']} kernel(s)")
    timing = split.get("speed_timing") or []
    # a comparison that ran its whole budget stopped there, not at its spread target or a settled verdict
    if any(_to_budget(entry) for entry in timing):
        out.append("speed cells timed to their budget (" + ", ".join(f"{entry[0]} {entry[1]} rounds in {entry[2]:.0f} s"
                                                                    for entry in timing) + ")")
    if split.get("slot_wait_seconds", 0) >= 1:
        out.append(f"its checks waited {split['slot_wait_seconds']:.0f} s for the machine's CPUs")
    if split.get("longest"):
        name, secs = split["longest"][0]
        out.append(f"longest: {name} {secs:.0f} s")
    return out
