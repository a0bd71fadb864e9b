"""`ladder calibrate`: time every recorded rung (grader/rungs.toml) on this GPU, say per bar whether the
current bar separates the rungs, propose bars, and write them as a bars override file.

Each rung is timed as a graded speed cell is: its cells (the solution notebook's learner cells, with the
rung's submission cells in place of the solution's) run in the grader's isolated worker
(grader.isolation.isolate), and the verifier times the learner's function through the graded
`measure_speed`, `runs` times in one check. The arithmetic is grader.harness.calibration's.
"""

from __future__ import annotations

import base64
import importlib
import json
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path

from .. import config
from ..chapters import names as chapter_names
from ..cuda.gpu import arch_here, gpu_info, versions
from ..errors import LadderError
from ..harness.bars import bar_for
from ..harness.calibration import Figures, Proposal, Rung, override_toml, propose, report, rungs
from ..isolation.isolate import check_sources
from ..learner import cells as nbcells
from .course import SOURCE_DIR, assignments, repo_root


def chapters_named(numbers: str | None) -> list[str]:
    """"1,5" -> ["ch01", "ch05"]; None -> every chapter."""
    if not numbers:
        return chapter_names()
    try:
        wanted = [f"ch{int(n):02d}" for n in numbers.split(",") if n.strip()]
    except ValueError:
        raise LadderError(f"--chapters takes chapter numbers separated by commas, such as 1,5; got {numbers!r}") from None
    unknown = [c for c in wanted if c not in chapter_names()]
    if unknown:
        raise LadderError(f"no chapter {', '.join(unknown)}; there are {', '.join(chapter_names())}")
    return wanted


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
    return Figures(rung, tuple(round(r.speedup, 4) for r in results),
                   tuple(round(r.baseline_ms / r.events_ms, 4) for r in results if r.events_ms),
                   tuple(round(b["untraced_ms"] / b["busy_ms"], 4) for b in bounds if b.get("busy_ms")),
                   tuple(r.comparison.rounds for r in results), tuple(round(r.comparison.elapsed_s, 2) for r in results))


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


def run(chapters: str | None, runs: int, out: Path, bars: str | None = None) -> int:
    from tqdm import tqdm

    if runs < 1:
        raise LadderError("--runs takes a number of at least 1")
    wanted = rungs_named(chapters, bars)   # a wrong --chapters or --bars is said before anything else
    info = gpu_info()
    if info is None:
        raise LadderError("calibrating times kernels on a GPU, and this machine has none: run `ladder calibrate` "
                          "on a machine with the GPU your class will be graded on")
    arch = arch_here().name
    root = repo_root()
    start = time.perf_counter()
    figures: dict[str, list[Figures]] = defaultdict(list)
    per_chapter: dict[str, float] = defaultdict(float)
    untimed: list[str] = []   # a rung this GPU cannot run (memory, architecture) leaves its bar to the others
    with tqdm(wanted, desc="ladder calibrate", unit="rung", file=sys.stderr) as bar:
        for rung in bar:
            bar.set_postfix_str(rung.label[:50])
            began = time.perf_counter()
            try:
                found = time_rung(root, rung, runs)
                figures[rung.bar].append(found)
                # Each rung as it is timed: a run cut short (a time limit, a lost machine) keeps what it measured.
                tqdm.write(f"{rung.bar} {rung.expect} {rung.label}: {found.spread()}"
                           + (f"; by the events where it ran {min(found.event_speedups):.3f}-"
                              f"{max(found.event_speedups):.3f}x" if found.event_speedups else "")
                           + (f"; untraced/traced {min(found.traced_ratios):.3f}-{max(found.traced_ratios):.3f}"
                              if found.traced_ratios else "")
                           + (f"; {min(found.rounds)}-{max(found.rounds)} timing rounds, "
                              f"{min(found.timing_s):.1f}-{max(found.timing_s):.1f} s a run of "
                              f"{(time.perf_counter() - began) / runs:.1f} s" if found.rounds else ""), file=sys.stdout)
            except LadderError as exc:
                untimed.append(str(exc))
                figures.setdefault(rung.bar, [])
            per_chapter[rung.chapter] += time.perf_counter() - began
    proposals: list[Proposal] = [propose(bar_for(key), found) for key, found in figures.items()]
    gpu = f"{info.name} ({arch})"
    print(f"{gpu}: {runs} runs a rung, {time.perf_counter() - start:.0f} s in all "
          f"({', '.join(f'{c} {s:.0f} s' for c, s in per_chapter.items())})\n")
    for p in proposals:
        print(report(p) + "\n")
    out.write_text(override_toml(proposals, arch, gpu, runs))
    record = out.with_suffix(".json")
    record.write_text(json.dumps({
        "gpu": info.name, "arch": arch, "versions": versions(), "runs": runs, "date": time.strftime("%Y-%m-%d"),
        "seconds": {"all": round(time.perf_counter() - start, 1), **{c: round(s, 1) for c, s in per_chapter.items()}},
        "bars": [{"key": p.key, "bar": p.current.bar, "separates": p.separates, "proposed": p.proposed,
                  "why_none": p.why_none,
                  "rungs": [{"label": f.rung.label, "expect": f.rung.expect, "speedups": list(f.speedups),
                             "event_speedups": list(f.event_speedups), "traced_ratios": list(f.traced_ratios),
                             "rounds": list(f.rounds), "timing_s": list(f.timing_s)}
                            for f in p.figures]} for p in proposals]}, indent=1))
    for reason in untimed:
        print(f"not timed: {reason}")
    held = [p.key for p in proposals if p.separates]
    print(f"The current bars separate the rungs of {len(held)} of {len(proposals)} bars on this GPU. Proposed bars: "
          f"{out} (use it with `ladder grade --bars {out}`); every run's figures: {record}")
    return 0 if len(held) == len(proposals) and not untimed else 1
