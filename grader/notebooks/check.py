"""`ladder check`: execute notebooks fresh and grade their autograded cells exactly as nbgrader does.

The notebook runs top to bottom in a new kernel, in its own folder, and is never written back. It
runs through the same executor as autograde (grader.notebooks.nbexec: nbgrader's Execute, but a
kernel that dies or hangs in a cell fails that cell only, and a fresh kernel carries on). Graded
cells are checked in the notebook's kernel unless `--isolated` (or LADDER_ISOLATED=1) asks for the
grading path; both gather the same facts and apply the same rules, so each cell gets the same verdict
and reason either way. Each autograded test cell is scored with nbgrader's own `determine_grade`: an
error or any stderr output scores 0. The JSON form (`--json`) is documented in docs/check-json.md and
versioned by its "schema" field.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import config
from ..calls.rules import reason_for
from ..learner.cells import is_autograded_test
from .points import Points
from .settings import configure_nbgrader
from .speed_outputs import speed_record

SCHEMA = "kernel-ladder.check/1"


@dataclass
class CellResult:
    grade_id: str
    points: float
    max_points: float
    outcome: str          # "pass", "fail" (error output), "stderr" (wrote to stderr), "not-run"
    error: dict | None = None    # {"ename": ..., "evalue": ...} for "fail"
    stderr: str | None = None
    reason: str | None = None    # the reason code (grader.errors.REASONS) of a cell that did not pass
    speed: dict | None = None    # a speed cell's figures: ratio, bar, times, SM clock (SpeedResult.as_record)

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def first_line(self) -> str:
        """What went wrong, in the first line of its message ("" for a cell that passed)."""
        if self.outcome == "fail" and self.error:
            first = (self.error["evalue"] or "").strip().splitlines()
            return f"{self.error['ename']}: {first[0] if first else ''}"
        if self.outcome == "stderr":
            return f"wrote to stderr (nbgrader scores that 0): {self.stderr.strip().splitlines()[0][:120]}"
        if self.outcome == "not-run":
            return "not run"
        return ""


@dataclass
class NotebookResult:
    path: str
    run: int
    seconds: float
    cells: list[CellResult] = field(default_factory=list)
    # The notebook could not be run to the end: its kernel would not start, or was lost (died or
    # hung) more often than the restarts allowed.
    error: str | None = None
    # Each time the notebook's kernel died or hung in a cell: that cell failed, a fresh kernel re-ran
    # the cells before it and the run went on (grader/notebooks/nbexec.py).
    kernel_losses: list[str] = field(default_factory=list)
    # Processes the learner's code left running, ended by the grader when their check ended (grader.processes).
    ended_processes: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(c.points for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_points for c in self.cells)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.cells) and all(c.passed for c in self.cells)

    @property
    def points(self) -> Points:
        """Earned, lost, and not checked here (no GPU, not gradable on this GPU, unchecked), with why."""
        return Points.of((c.points, c.max_points, c.reason) for c in self.cells)

    @property
    def nothing_lost(self) -> bool:
        """Every graded cell passed or could not be checked on this machine: what the exit status says."""
        return self.error is None and bool(self.cells) and self.points.lost <= 1e-9

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(score=self.score, max_score=self.max_score, passed=self.passed, nothing_lost=self.nothing_lost,
                 **self.points.as_dict())
        for cell, raw in zip(self.cells, d["cells"]):
            raw["passed"] = cell.passed
        return d


def _not_run(cell) -> bool:
    """LadderExecute marked the cell not run: the kernel was lost too often before it."""
    from .nbexec import NOT_RUN

    return any(o.get("output_type") == "error" and o.get("ename") == NOT_RUN for o in cell.get("outputs", []))


def error_reason(error: dict) -> str:
    """A failed cell's reason code: the `[reason: ...]` line every grader error ends with (in the
    notebook's kernel and in isolation alike), or the one its exception's class stands for."""
    found = re.findall(r"\[reason: ([a-z0-9-]+)", error.get("evalue") or "")
    return found[-1] if found else reason_for(error.get("ename") or "")


def grade_cells(nb, executed_ids: set[str] | None = None) -> list[CellResult]:
    """Score the autograded test cells of an executed notebook with nbgrader's rule."""
    from nbgrader.utils import determine_grade

    results = []
    for cell in nb.cells:
        if not is_autograded_test(cell):
            continue
        gid = cell.metadata.nbgrader.get("grade_id", "?")
        max_points = float(cell.metadata.nbgrader.get("points", 0))
        if (executed_ids is not None and cell.get("id") not in executed_ids) or _not_run(cell):
            results.append(CellResult(gid, 0.0, max_points, "not-run", reason="not-run"))
            continue
        points, max_points = determine_grade(cell)
        error = next(({"ename": o.get("ename", ""), "evalue": o.get("evalue", "")}
                      for o in cell.outputs if o.output_type == "error"), None)
        stderr = "".join(o.get("text", "") for o in cell.outputs
                         if o.output_type == "stream" and o.get("name") == "stderr") or None
        outcome = "fail" if error else ("stderr" if stderr else "pass")
        reason = error_reason(error) if error else ("stderr" if stderr else None)
        results.append(CellResult(gid, float(points or 0.0), max_points, outcome, error, stderr, reason,
                                  speed_record(cell)))
    return results


def failed_cells(autograded_nb: Path) -> dict[str, tuple[str, str]]:
    """grade_id -> (reason code, the first line of its message) of each graded cell that did not pass in a
    notebook nbgrader autograded: what `--json` gives for each cell, for `ladder grade`'s summary."""
    import nbformat

    if not Path(autograded_nb).is_file():
        return {}
    cells = grade_cells(nbformat.read(str(autograded_nb), as_version=4))
    return {c.grade_id: (c.reason or "failed", c.first_line()) for c in cells if not c.passed}


def run_notebook(path: Path, run: int = 1, timeout: int | None = None) -> NotebookResult:
    import nbformat
    from traitlets.config import Config

    from .nbexec import LadderExecute

    nb = nbformat.read(str(path), as_version=4)
    # nbgrader's own execution settings, so a cell behaves here as it will under autograde. They
    # go through the config: ExecutePreprocessor.preprocess re-initialises the client from config
    # and would drop keyword arguments.
    c = Config()
    configure_nbgrader(c)
    c.LadderExecute.timeout = timeout or config.cell_timeout_s()
    c.LadderExecute.kernel_name = "python3"
    # A learner's own check runs its graded cells in the notebook's kernel (about 4x faster on
    # chapter 5, where every isolated check autotunes again), by the same rules; `ladder check
    # --isolated` checks them as grading does.
    c.LadderExecute.isolated_checks = config.isolated(default=False)
    executor = LadderExecute(config=c)
    start = time.perf_counter()
    error = None
    try:
        executor.preprocess(nb, {"metadata": {"path": str(path.parent.resolve())}})
    except Exception as exc:  # the kernel would not start or answer: nothing more can run
        first = (str(exc).strip().splitlines() or [""])[0]
        error = f"the notebook could not be run: {type(exc).__name__}: {first}"
    losses = [crash.describe() for crash in getattr(executor, "crashes", [])]
    if getattr(executor, "stopped", None) and not error:
        error = f"{executor.stopped}: the cells after the last loss were not run"
    result = NotebookResult(str(path), run, time.perf_counter() - start, error=error, kernel_losses=losses,
                            ended_processes=list(getattr(executor, "ended", [])))
    # Cells that ran (to the end, or until their kernel was lost); the others score 0 as not run.
    ran = getattr(executor, "ran", set()) | set(getattr(executor, "lost", ()))
    result.cells = grade_cells(nb, {nb.cells[i].get("id") for i in ran} if error else None)
    return result


def format_result(r: NotebookResult) -> str:
    lines = [f"{r.path}  (run {r.run}, {r.seconds:.0f} s)"]
    for loss in r.kernel_losses:
        lines.append(f"  ! {loss}")
    if r.ended_processes:
        lines.append(f"  ! your code left {len(r.ended_processes)} process(es) running, ended when their check "
                     f"ended: {'; '.join(r.ended_processes[:3])}")
    if r.error:
        lines.append(f"  ! {r.error}")
    if not r.cells:
        lines.append("  ! no autograded test cells found")
    width = max((len(c.grade_id) for c in r.cells), default=10)
    for c in r.cells:
        mark = "✓" if c.passed else "✗"
        line = f"  {mark} {c.grade_id:<{width}}  {c.points:g}/{c.max_points:g}"
        if c.outcome == "fail" and c.error:
            line += f"  [{c.reason}] {c.first_line()}"
        elif c.outcome in ("stderr", "not-run"):
            line += f"  {c.first_line()}"
        lines.append(line)
    lines.append(f"  {score_line(r)}")
    return "\n".join(lines)


def score_line(r: NotebookResult) -> str:
    """"score 15/15  PASS"; "score 9/15  FAIL: 4 points lost; 2 points need a GPU"; or, where nothing checked was
    lost, "score 3/15: 3/3 checked points; 12 points need a GPU (not checked here, not lost)"."""
    points = r.points
    if r.passed:
        return f"score {r.score:g}/{r.max_score:g}  PASS"
    if r.nothing_lost:
        return f"score {r.score:g}/{r.max_score:g}: {points.describe()} (not checked here, not lost)"
    lost = f"{points.lost:g} point{'s' if points.lost != 1 else ''} lost"
    unchecked = f"; {points.why_not_checked()}" if points.unchecked else ""
    return f"score {r.score:g}/{r.max_score:g}  FAIL: {lost}{unchecked}"


def check(paths: list[Path], repeat: int = 1, as_json: bool = False, echo=print) -> bool:
    results = []
    for run in range(1, repeat + 1):
        for path in paths:
            r = run_notebook(path, run)
            results.append(r)
            if not as_json:
                echo(format_result(r))
    passed = all(r.passed for r in results)
    nothing_lost = all(r.nothing_lost for r in results)
    if as_json:
        echo(json.dumps({"schema": SCHEMA, "passed": passed, "nothing_lost": nothing_lost,
                         "notebooks": [r.as_dict() for r in results]}, indent=2))
    elif repeat > 1 or len(paths) > 1:
        n_ok = sum(r.passed for r in results)
        partly = sum(r.nothing_lost and not r.passed for r in results)
        echo(f"{n_ok} of {len(results)} notebook runs passed every graded cell"
             + (f"; {partly} more lost no point but had cells this machine could not check" if partly else ""))
    # The exit status: 0 where no checked cell lost a point; a cell this machine could not check (no GPU, a bar
    # out of reach of this GPU) is no failure of the learner's.
    return nothing_lost
