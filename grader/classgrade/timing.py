"""Where one student's grading time went, read back from their autograded notebook.

nbclient stamps every cell it runs (`metadata.execution`: busy, then idle, as ISO times) and
grader.notebooks.nbexec stamps every isolated check (`metadata.ladder`: the check's seconds, and of
them the worker's start with the learner's cells; whether it ran ahead of the notebook, beside other
checks (grader.notebooks.ahead), and how long the notebook waited for its verdict). Checks ahead overlap
each other and the notebook's own cells, so their seconds add up to more than the wall time; the waits
do not. Nothing is timed twice: this only reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class CellTime:
    index: int
    name: str          # grade_id, or "cell N" with the first line of its source
    seconds: float
    kind: str          # "check" (an isolated graded test), "cell" (run in the notebook's kernel)
    load_seconds: float = 0.0
    ahead: bool = False          # a check whose verdict came from ahead of the notebook
    wait_seconds: float | None = None   # how long the notebook waited for a check's verdict


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

    def top(self, n: int = 8) -> list[CellTime]:
        return sorted(self.cells, key=lambda c: -c.seconds)[:n]

    def as_dict(self) -> dict:
        return {"kernel_seconds": round(self.kernel_seconds, 2), "check_seconds": round(self.check_seconds, 2),
                "check_load_seconds": round(self.load_seconds, 2), "check_wait_seconds": round(self.wait_seconds, 2),
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
                                      None if wait is None else float(wait)))
            continue
        stamps = meta.get("execution", {})
        start = stamps.get("iopub.status.busy") or stamps.get("iopub.execute_input")
        end = stamps.get("iopub.status.idle") or stamps.get("shell.execute_reply")
        if start and end:
            out.cells.append(CellTime(index, name, max(0.0, (_stamp(end) - _stamp(start)).total_seconds()), "cell"))
    return out
