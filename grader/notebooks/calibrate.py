"""Timing one recorded rung (grader/rungs.toml) for `ladder calibrate` (grader.classgrade.calibrate, which
says per bar whether the current bar separates the rungs and proposes bars).

Each rung is timed as a graded speed cell is: its cells (the solution notebook's learner cells, with the
rung's submission cells in place of the solution's) run in the grader's isolated worker
(grader.isolation.isolate), and the verifier times the learner's function through the graded
`measure_speed`, `runs` times in one check: each run's speedup, or for a copy-ceiling bar each run's fraction
of the copy ceiling measured in that run. The arithmetic is grader.harness.calibration's.
"""

from __future__ import annotations

import base64
import importlib
import pickle
import sys
from pathlib import Path

from .. import config
from ..chapters import names as chapter_names
from ..errors import LadderError
from ..harness.calibration import Figures, Rung, rungs
from ..isolation.isolate import check_sources
from ..learner import cells as nbcells
from .course import SOURCE_DIR, assignments, repo_root
from .course import chapter_names as course_chapter_names
from .recognise import course_root


def chapters_named(numbers: str | None) -> list[str]:
    """"1,5" or "01_vector_add,5" -> ["ch01", "ch05"] (chapters named as every command names them:
    grader.notebooks.course.chapter_names); None -> every chapter."""
    if not numbers:
        return chapter_names()
    root = course_root() or repo_root()   # repo_root: the error that says where it looked
    folders = course_chapter_names(root, [n for n in numbers.split(",") if n.strip()] or [numbers])
    return [f"ch{folder[:2]}" for folder in folders]


def solution_notebook(root: Path, chapter: str) -> Path:
    folder = next(a for a in assignments(root) if a.startswith(chapter[2:] + "_"))
    return next((root / SOURCE_DIR / folder).glob("*.ipynb"))


def rung_cells(root: Path, rung: Rung) -> list[tuple[str, str]]:
    """The learner cells a rung is graded with: the solution notebook's, the submission's cells in place."""
    notebook = solution_notebook(root, rung.chapter)
    cells = nbcells.learner_cells(notebook)
    if rung.submission == "solution":
        return cells
    # The rungs below are the test suite's own submissions (tests/submissions/), shared rather than copied.
    if str(root / "tests") not in sys.path:
        sys.path.insert(0, str(root / "tests"))
    replaced = importlib.import_module(f"submissions.{rung.chapter}.{rung.submission}").CELLS
    unknown = set(replaced) - {name for name, _ in cells}
    if unknown:
        raise LadderError(f"rung {rung.label!r}: {rung.submission} replaces cells {sorted(unknown)} that "
                          f"{notebook.name} does not have")
    return [(name, replaced.get(name, source)) for name, source in cells]


def timing_cell(rung: Rung, runs: int) -> str:
    """The check the verifier runs: `runs` graded measurements, each assigned to its own name so that the
    results come back as the grader's own values (grader.isolation.verifier passes only those)."""
    lines = ["from grader.harness.exercise import measure_speed"]
    lines += [f"calibration_run_{i} = measure_speed({rung.exercise}, {rung.launcher}, {rung.bar!r})"
              for i in range(runs)]
    return "\n".join(lines) + "\n"


def time_rung(root: Path, rung: Rung, runs: int) -> Figures:
    verdict = check_sources(rung_cells(root, rung), timing_cell(rung, runs), f"calibrate {rung.label}",
                            timeout_s=config.cell_timeout_s() * runs,
                            cwd=str(solution_notebook(root, rung.chapter).parent))   # as grading runs a notebook
    if not verdict.passed or not verdict.values:
        raise LadderError(f"rung {rung.label!r} could not be timed ({verdict.reason}): {verdict.message.strip()}")
    results = [pickle.loads(base64.b64decode(verdict.values))[f"calibration_run_{i}"] for i in range(runs)]
    bounds = [(r.integrity or {}).get("bound") or {} for r in results]
    return Figures(rung, tuple(round(r.value, 4) for r in results),
                   tuple(round(r.value_at(r.events_ms), 4) for r in results if r.events_ms),
                   tuple(round(b["untraced_ms"] / b["busy_ms"], 4) for b in bounds if b.get("busy_ms")),
                   tuple(r.comparison.rounds for r in results),
                   tuple(round(r.comparison.elapsed_s, 2) for r in results),
                   unit=" of the copy ceiling" if results[0].fraction is not None else "x")


def rungs_named(chapters: str | None, bars: str | None) -> list[Rung]:
    """The rungs of the chapters named, of the bars named among them ("5a,5b"; None: all)."""
    found = rungs(chapters_named(chapters))
    if not bars:
        return found
    keys = [k.strip() for k in bars.split(",") if k.strip()]
    known = list(dict.fromkeys(r.bar for r in found))
    unknown = [k for k in keys if k not in known]
    if unknown or not keys:
        raise LadderError(f"--bars: no recorded rungs for {', '.join(unknown) or repr(bars)}"
                          f"{' in the chapters named' if chapters else ''}; the bars with rungs are {', '.join(known)}")
    return [r for r in found if r.bar in keys]
