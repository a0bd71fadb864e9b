"""Graded checks in fresh processes: the one adapter between a notebook and the grader's verdict.

The interface is deliberately narrow. A check is described by data only:
- the learner's cells: the notebook's `setup` cell and its nbgrader solution cells before the test
  cell, as (name, source) pairs, taken from the notebook file, never from a running kernel;
- the test cell's own source (in nbgrader's autograde, restored from the gradebook).

`check_cell(nb, grade_id)` runs `python -m grader.verify` (the verifier, which never executes learner
code) in a new process group; the verifier starts a worker that executes the learner's cells (see
grader/worker.py and grader/remote.py). The verdict comes back over a pipe that only the verifier
holds, as a `Verdict`. Nothing the notebook's own kernel did (patched torch, a patched timer or grader,
cached tensors, a broken CUDA context) can reach it. docs/isolation.md describes the design.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .settings import CELL_TIMEOUT_S

SETUP_CELL = "setup"


@dataclass
class Verdict:
    passed: bool
    reason: str | None
    message: str
    stdout: str
    seconds: float
    cls: str | None = None
    values: str | None = None   # base64 pickle of the names the test cell assigned (grader results)

    def error_name(self) -> str:
        return self.cls or ("CheckFailed" if not self.passed else "")


def _read(nb):
    import nbformat

    if isinstance(nb, (str, Path)):
        return nbformat.read(str(nb), as_version=4)
    return nb


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_learner_cell(cell) -> bool:
    """The code a check rebuilds the learner's work from: the setup cell and every solution cell."""
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and (meta.get("grade_id") == SETUP_CELL or bool(meta.get("solution")))


def learner_cells(nb, upto: str | None = None) -> list[tuple[str, str]]:
    """(name, source) of the setup cell and every solution cell before the test cell `upto`."""
    nb = _read(nb)
    cells = []
    for cell in nb.cells:
        gid = _meta(cell).get("grade_id")
        if upto is not None and gid == upto:
            break
        if is_learner_cell(cell):
            cells.append((gid or f"cell-{len(cells)}", "".join(cell.get("source", ""))))
    return cells


def test_source(nb, grade_id: str) -> str:
    nb = _read(nb)
    for cell in nb.cells:
        if _meta(cell).get("grade_id") == grade_id:
            return "".join(cell.get("source", ""))
    raise KeyError(f"no cell with grade_id {grade_id!r}")


def is_autograded_test(cell) -> bool:
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def check_cell(nb, grade_id: str, timeout_s: float = CELL_TIMEOUT_S, cwd: str | None = None) -> Verdict:
    """Run one autograded test cell of `nb` against the learner's cells, isolated."""
    path = Path(nb).resolve() if isinstance(nb, (str, Path)) else None
    nb = _read(nb)
    return check_sources(learner_cells(nb, grade_id), test_source(nb, grade_id), grade_id, timeout_s,
                         cwd or (str(path.parent) if path else None))


def check_sources(cells: list[tuple[str, str]], source: str, name: str = "test", timeout_s: float = CELL_TIMEOUT_S,
                  cwd: str | None = None) -> Verdict:
    job = {"cells": cells, "test": source, "test_name": name}
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("LADDER_QUIET_START", None)
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "grader.verify", str(write_fd)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_fd,), cwd=cwd, env=env,
                            start_new_session=True)
    os.close(write_fd)
    try:
        out, err = proc.communicate(json.dumps(job).encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        os.close(read_fd)
        return Verdict(False, "timed-out", f"{name}: timed out after {timeout_s:.0f} s; the processes running the "
                       "check were stopped, which frees the GPU.", out.decode("utf-8", "replace"),
                       time.perf_counter() - start, "CheckTimedOut")
    finally:
        _kill_group(proc)
    with os.fdopen(read_fd, "rb") as f:
        raw = f.read()
    stdout = out.decode("utf-8", "replace")
    if not raw:
        tail = err.decode("utf-8", "replace").strip()[-2000:]
        return Verdict(False, "crashed", f"{name}: the grader's checking process ended without a verdict "
                       f"(exit status {proc.returncode}).\n{tail}", stdout, time.perf_counter() - start, "WorkerCrashed")
    v = json.loads(raw)
    return Verdict(v["passed"], v.get("reason"), v.get("message", ""), stdout, v.get("seconds", 0.0), v.get("cls"),
                   v.get("values"))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
