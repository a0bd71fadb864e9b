"""The class report: one self-contained HTML page about one graded assignment (WORKSPACE/report.html).

Everything on it is read back from what `ladder grade` left in the workspace; nothing is measured again:
the scores from nbgrader's gradebook, each graded cell's verdict and reason from the autograded notebook
(grader.notebooks.check.grade_cells, the rules `ladder check --json` uses), each speed from the record
a speed cell's report ends with (grader.harness.results.SpeedResult.as_record), the run from the journal
(grader.classgrade.journal) and the record of students not graded (grader.classgrade.record). The recorded
rungs a speed is set beside are the calibration runs kept in assets/results/*/ (written by `ladder calibrate`).

Figures are matplotlib PNGs inlined as base64 and the page comes from a Jinja2 template
(report.html.j2), so it opens from disk in any browser: no server, no network, no script.

The first screen says where the class stands (every student grades.csv counts, a student not graded as its 0;
the points not checked here apart from those lost) and who needs help, one line a student: their first cell that
lost points, linked to it in their feedback. Every long list folds after `SHOWN` rows (HTML's <details>), and the
time per student is a histogram past `BARS_PER_STUDENT` students, so that a class of 200 stays a few screens long.
Every sentence is said of the class at hand: none claims a pass for a class nobody was graded in.
"""

from __future__ import annotations

import base64
import io
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import REASONS, LadderError
from ..notebooks.check import CellResult, grade_cells
from ..notebooks.points import NOT_CHECKED, Points, class_not_checked

if TYPE_CHECKING:
    from .record import Workspace

REPORT_NAME = "report.html"
# The reasons that reject a kernel for how it got its answer or its time, not for a mistake: the Integrity
# section groups these; "who needs help" marks a student whose first lost cell is one of them.
INTEGRITY = ("kernel-unused", "library-compute", "swallowed-error", "stray-thread", "stray-process", "tampered",
             "timer-mismatch",
             "too-fast", "l2-persist")
LEADERBOARD_NAMES = ("names", "initials", "none")
LEADERBOARD_SIZE = 10
# The calibration runs behind bars.toml (`ladder calibrate` writes them), beside the package as the
# recorded profiles are (grader.profiles.recorded); an installed copy without them shows no rungs.
RESULTS = Path(__file__).resolve().parents[2] / "assets" / "results"
CALIBRATIONS = "**/*calibration*.json"
# `ladder calibrate --out NAME.toml` keeps its runs beside the bars, in NAME.json (grader.classgrade.calibrate)
CALIBRATE_BARS = "**/*.toml"

@dataclass
class Speed:
    exercise: str       # the bar's key, as in bars.toml
    value: float        # what the bar judged: the speedup, or the fraction of the copy ceiling (`unit`)
    bar: float
    gpu: str
    passed: bool
    throttled: bool = False   # the SM clock was held down (heat or power) while it was timed
    crowded: bool = False     # another process computed on the GPU while it was timed (grader.cuda.neighbours)
    unit: str = "x"           # "x", or " of the copy ceiling" for a copy-ceiling bar (grader.harness.bars)


@dataclass
class Student:
    name: str
    score: float
    max_score: float
    cells: list[CellResult]
    cell_ids: dict[str, str]            # grade_id -> the cell's id (the feedback page's anchor is cell-id=ID)
    speeds: list[Speed]
    messages: dict[str, str]            # grade_id -> the first line of a failed cell's error
    feedback: str | None                # relative to the report
    seconds: float | None = None
    worker: str = ""
    attempts: int = 1
    notes: list[str] = field(default_factory=list)
    why: str | None = None              # why nothing could be graded (a student with no graded cell)

    @property
    def graded(self) -> bool:
        return bool(self.cells)

    @property
    def points(self) -> Points:
        return Points.of((c.points, c.max_points, c.reason) for c in self.cells)

    def lost_cells(self) -> list[CellResult]:
        """The graded cells that lost points (not those this machine could not check), in the notebook's order."""
        return [c for c in self.cells if c.points < c.max_points and (c.reason or "failed") not in NOT_CHECKED]

    def link(self, grade_id: str | None = None) -> str | None:
        if self.feedback is None:
            return None
        anchor = self.cell_ids.get(grade_id) if grade_id else None
        return self.feedback + (f"#cell-id={anchor}" if anchor else "")


@dataclass
class Rung:
    name: str
    value: float        # the median of its calibration runs (a speedup or a fraction, as its bar judges)
    gpu: str


def speed_from(cell: CellResult) -> Speed | None:
    """The speed a graded cell's check measured: the `[speed: {...}]` record its report ends with, passed or not,
    as grade_cells reads it for `ladder check --json`."""
    record = cell.speed
    if not record:
        return None
    fraction = record.get("fraction") if record.get("kind") == "copy-ceiling" else None
    return Speed(record["key"], float(record["ratio"] if fraction is None else fraction), float(record["bar"]),
                 record.get("gpu") or "?", bool(record["passed"]), bool(record.get("throttled")),
                 bool(record.get("crowded")), "x" if fraction is None else " of the copy ceiling")


def initials(name: str) -> str:
    parts = [p for p in re.split(r"[\s_.\-]+", name) if p]
    return "".join(p[0].upper() for p in parts) or "?"


def shown_name(name: str, setting: str) -> str:
    return {"names": name, "initials": initials(name), "none": ""}[setting]


def _rung_name(label: str) -> str:
    """"5a naive kernel (naive_5a)" -> "naive_5a": the rung's own name, where its label gives one."""
    found = re.search(r"\(([^()]+)\)\s*$", label)
    return found[1] if found else label or "?"


def _calibrated(data: dict) -> list[tuple[str, str, list[float]]]:
    """(bar key, rung label, figures) of one calibration record, in either of its two layouts: a chapter's
    calibration script's ("rungs", each with its "runs"), or `ladder calibrate`'s ("bars", each with its rungs'
    "values": speedups, or fractions of the copy ceiling for a copy-ceiling bar; "speedups" in older records)."""
    found = []
    for rung in data.get("rungs", []) if isinstance(data.get("rungs"), list) else []:
        if isinstance(rung, dict) and "bar_key" in rung:
            found.append((rung["bar_key"], rung.get("rung", ""),
                          [r.get("speedup") for r in rung.get("runs", []) if isinstance(r, dict)]))
    for bar in data.get("bars", []) if isinstance(data.get("bars"), list) else []:
        for rung in bar.get("rungs", []) if isinstance(bar, dict) and "key" in bar else []:
            if isinstance(rung, dict):
                found.append((bar["key"], rung.get("label", ""), list(rung.get("values") or rung.get("speedups") or [])))
    return [(key, label, [v for v in values if isinstance(v, (int, float))]) for key, label, values in found]


def recorded_rungs(root: Path = RESULTS) -> dict[str, list[Rung]]:
    """bar key -> the rungs calibrated for it, on each GPU (assets/results/: each rung's speed-ups over its runs)."""
    found: dict[str, dict[tuple[str, str], Rung]] = defaultdict(dict)
    records = set(root.glob(CALIBRATIONS)) | {bars.with_suffix(".json") for bars in root.glob(CALIBRATE_BARS)
                                              if bars.with_suffix(".json").is_file()}
    for path in sorted(records):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        gpu = data.get("gpu", "?")
        for key, label, values in _calibrated(data):
            if values:
                name = _rung_name(label)
                found[key].setdefault((name, gpu), Rung(name, statistics.median(values), gpu))
    return {key: list(rungs.values()) for key, rungs in found.items()}


def _student(ws: Workspace, name: str, score: float, max_score: float, report_dir: Path) -> Student:
    import nbformat

    path = ws.autograded_path(name)
    cells, ids, speeds, messages = [], {}, [], {}
    if path.is_file():
        nb = nbformat.read(str(path), as_version=4)
        cells = grade_cells(nb)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if not gid:
                continue
            if cell.get("id"):
                ids[gid] = cell["id"]
        speeds = [speed for speed in map(speed_from, cells) if speed is not None]
        for c in cells:
            if c.error:
                messages[c.grade_id] = next((line for line in (c.error.get("evalue") or "").splitlines()
                                             if line.strip()), c.error.get("ename", ""))
            elif c.stderr:
                messages[c.grade_id] = "wrote to stderr: " + c.stderr.strip().splitlines()[0]
    feedback = ws.feedback_path(name)
    link = Path(feedback).relative_to(report_dir).as_posix() if feedback.is_file() else None
    return Student(name, score, max_score, cells, ids, speeds, messages, link)


def gather(ws: Workspace, report_dir: Path) -> list[Student]:
    """Every student grades.csv has a row for (every student of the gradebook, with this assignment's score, 0
    where there is no submission), and every student the last run could not grade; a student with no graded cell
    carries why (`Student.why`)."""
    from nbgrader.api import Gradebook

    with Gradebook(ws.db_url) as gb:
        submitted = {s.student_id: (max(0.0, float(s.score or 0.0) - float(s.late_submission_penalty or 0.0)),
                                    float(s.max_score or 0.0)) for s in gb.assignment_submissions(ws.assignment)}
        everyone = {student.id for student in gb.students}
        top = float(gb.find_assignment(ws.assignment).max_score or 0.0)
    journal = ws.journal.entries(ws.assignment)
    not_graded = ws.not_graded()
    students = []
    for name in sorted(everyone | set(submitted) | set(not_graded)):
        score, max_score = submitted.get(name, (0.0, top))
        student = _student(ws, name, score, max_score, report_dir)
        entry = journal.get(name)
        if entry is not None:
            student.seconds, student.worker, student.attempts = entry.seconds, entry.worker, entry.attempts
            student.notes = entry.notes
        if not student.cells:
            student.why = not_graded.get(name) or ("no autograded notebook in the workspace" if name in submitted
                                                   else "no submission recorded in the gradebook")
        students.append(student)
    return students


# ----------------------------------------------------------------------------------------------- figures

def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg", force=False)   # no display: the figures only go to PNG
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def score_figure(students: list[Student]) -> str:
    fig, ax = _figure(6, 2.2)
    top = max((s.max_score for s in students), default=1.0) or 1.0
    scores = [s.score for s in students]
    bins = [x - 0.5 for x in range(int(top) + 2)] if top <= 40 else 20
    ax.hist(scores, bins=bins, color="#4878a8", edgecolor="white")
    ax.set_xlabel(f"score (of {top:g})")
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(-0.5, top + 0.5)
    return _png(fig)


def pass_rate_figure(rates: list[dict]) -> str:
    """Per graded cell, the graded students who passed (green), failed for each reason, or could not be checked
    here (grey, hatched)."""
    import matplotlib.pyplot as plt

    fig, ax = _figure(7, 0.3 * len(rates) + 1.0)
    labels = list(dict.fromkeys(label for row in rates for label, _ in row["shares"][1:]))
    others = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i not in (2, 7)]   # green: pass; grey: unchecked
    lost = [label for label in labels if not label.startswith("not checked")]
    colours = {label: others[i % len(others)] for i, label in enumerate(lost)}
    names = [row["cell"] for row in rates][::-1]
    left = [0.0] * len(names)
    for label in ["pass", *labels]:
        share = [dict(row["shares"]).get(label, 0.0) for row in rates][::-1]
        unchecked = label.startswith("not checked")
        ax.barh(names, share, left=left, label=label, color="#59a14f" if label == "pass" else
                "#c8c8c8" if unchecked else colours[label], hatch="//" if unchecked else None,
                edgecolor="white" if not unchecked else "#999999")
        left = [a + b for a, b in zip(left, share)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of graded students")
    ax.tick_params(axis="y", labelsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(fig)


def speed_figure(exercise: str, speeds: list[Speed], rungs: list[Rung]) -> str:
    fig, ax = _figure(7, 2.4)
    values = [s.value for s in speeds]
    bar, unit = speeds[0].bar, speeds[0].unit
    rows = [0.1 * (i % 5) - 0.2 for i in range(len(values))]   # a little apart, so that equal speeds both show
    ax.scatter(values, rows, s=60, alpha=0.6, color=["#59a14f" if s.passed else "#e15759" for s in speeds], zorder=3)
    ax.axvline(bar, color="black", lw=2)
    short = "x" if unit == "x" else ""
    ax.annotate(f"bar {bar:.2f}{short}", (bar, 0.85), textcoords="offset points", xytext=(4, 0), fontsize=8)
    for i, rung in enumerate(rungs):
        ax.axvline(rung.value, color="#999999", ls="--", lw=1)
        ax.annotate(f"{rung.name} {rung.value:.2f}{short}", (rung.value, 0.65 - 0.2 * (i % 4)),
                    textcoords="offset points", xytext=(4, 0), fontsize=7, color="#555555")
    everything = values + [bar] + [r.value for r in rungs]
    lo, hi = min(everything), max(everything)
    if lo > 0 and hi / lo > 20:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.3, hi * 1.3)
    else:
        pad = 0.08 * (hi - lo) or 0.1 * hi or 1.0
        ax.set_xlim(lo - pad, hi + 2 * pad)   # room on the right for the last line's label
    ax.set_ylim(-0.5, 1.0)
    ax.set_yticks([])
    ax.set_xlabel(f"{exercise}: speed-up over the baseline (x)" if unit == "x"
                  else f"{exercise}: fraction of the GPU's copy ceiling, measured in each student's run")
    return _png(fig)


# Above this many students, a figure of one bar a student would be taller than a screen: their seconds are binned.
BARS_PER_STUDENT = 30


def time_figure(students: list[Student]) -> str:
    timed = sorted((s for s in students if s.seconds is not None), key=lambda s: -s.seconds)
    if len(timed) > BARS_PER_STUDENT:
        fig, ax = _figure(7, 2.4)
        ax.hist([s.seconds for s in timed], bins=20, color="#4878a8", edgecolor="white")
        ax.set_xlabel("seconds to grade")
        ax.set_ylabel("students")
        ax.yaxis.get_major_locator().set_params(integer=True)
        return _png(fig)
    fig, ax = _figure(7, 0.25 * len(timed) + 1.0)
    ax.barh([s.name for s in timed][::-1], [s.seconds for s in timed][::-1], color="#4878a8")
    ax.set_xlabel("seconds to grade")
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


# ----------------------------------------------------------------------------------------------- sections

def pass_rates(students: list[Student]) -> list[dict]:
    """Per graded cell, in notebook order: the share of the students it was checked for that passed, the share of
    them each reason failed, and how many it could not be checked for here, by reason (grader.notebooks.points)."""
    order: list[str] = []
    outcomes: dict[str, list[str | None]] = defaultdict(list)
    points: dict[str, float] = {}
    for s in students:
        for c in s.cells:
            if c.grade_id not in outcomes:
                order.append(c.grade_id)
            points[c.grade_id] = c.max_points
            outcomes[c.grade_id].append(None if c.points == c.max_points else c.reason or "failed")
    rates = []
    for gid in order:
        seen = outcomes[gid]
        unchecked = Counter(r for r in seen if r in NOT_CHECKED)
        checked = [r for r in seen if r not in NOT_CHECKED]
        reasons = Counter(r for r in checked if r is not None)
        pct = 100 * sum(r is None for r in checked) / len(checked) if checked else None
        rates.append({"cell": gid, "points": points[gid], "students": len(seen), "checked": len(checked),
                      "pass_pct": pct,
                      "reasons": [(r, 100 * n / len(checked)) for r, n in reasons.most_common()],
                      "not_checked": unchecked.most_common(),
                      # shares of every graded student, for the figure: pass, each reason, each reason not checked
                      "shares": [("pass", 100 * sum(r is None for r in seen) / len(seen))]
                      + [(r, 100 * n / len(seen)) for r, n in reasons.most_common()]
                      + [(f"not checked: {r}", 100 * n / len(seen)) for r, n in unchecked.most_common()]})
    return rates


def needs_help(students: list[Student]) -> list[dict]:
    """One row a student who lost points or was not graded, lowest score first: their first cell that lost points
    (in the notebook's order), its reason and the first line of what it said, linked to that cell of their feedback;
    how many more cells they lost; whether any of them was rejected for how a kernel got its answer or its time
    (INTEGRITY). Cells this machine could not check are no student's mistake: left out."""
    rows = []
    for s in students:
        if not s.graded:
            rows.append({"name": s.name, "link": s.link(), "score": s.score, "max": s.max_score, "cell": None,
                         "reason": "not-graded", "meaning": REASONS["not-graded"], "message": s.why or "", "more": 0,
                         "integrity": False})
            continue
        lost = s.lost_cells()
        if not lost:
            continue
        first = lost[0]
        reason = first.reason or "failed"
        rows.append({"name": s.name, "link": s.link(first.grade_id), "score": s.score, "max": s.max_score,
                     "cell": first.grade_id, "reason": reason, "meaning": REASONS.get(reason, ""),
                     "message": s.messages.get(first.grade_id, ""), "more": len(lost) - 1,
                     "integrity": any((c.reason or "failed") in INTEGRITY for c in lost)})
    return sorted(rows, key=lambda r: (r["score"], r["name"]))


def integrity_groups(students: list[Student]) -> list[dict]:
    """Students whose kernel was rejected for how it got its answer or its time (INTEGRITY), grouped by reason and
    cell, each with a link to that cell's feedback."""
    found: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for s in students:
        for c in s.cells:
            reason = c.reason or "failed"
            if c.points < c.max_points and reason in INTEGRITY:
                found[(c.grade_id, reason)].append({"name": s.name, "link": s.link(c.grade_id),
                                                    "message": s.messages.get(c.grade_id, "")})
    order = {c.grade_id: i for s in students for i, c in enumerate(s.cells)}   # the notebook's order
    return [{"cell": gid, "reason": reason, "meaning": REASONS.get(reason, ""), "students": members}
            for (gid, reason), members in sorted(found.items(), key=lambda kv: (kv[0][1], order[kv[0][0]]))]


def speed_sections(students: list[Student], rungs: dict[str, list[Rung]], leaderboard: str) -> list[dict]:
    by_exercise: dict[str, list[tuple[Student, Speed]]] = defaultdict(list)
    for s in students:
        for sp in s.speeds:
            by_exercise[sp.exercise].append((s, sp))
    sections = []
    for exercise in sorted(by_exercise):
        measured = by_exercise[exercise]
        speeds = [sp for _, sp in measured]
        gpus = sorted({sp.gpu for sp in speeds})
        recorded = rungs.get(exercise, [])
        same_gpu = [r for r in recorded if any(r.gpu in g or g in r.gpu for g in gpus)]
        shown = same_gpu or recorded
        fastest = sorted(measured, key=lambda m: -m[1].value)[:LEADERBOARD_SIZE]
        sections.append({
            "exercise": exercise, "bar": speeds[0].bar, "unit": speeds[0].unit, "gpus": gpus, "count": len(speeds),
            "passed": sum(sp.passed for sp in speeds), "median": statistics.median(sp.value for sp in speeds),
            "figure": speed_figure(exercise, speeds, shown), "rungs": shown,
            "crowded": sum(sp.crowded for sp in speeds),
            "leaders": [{"rank": i + 1, "who": shown_name(s.name, leaderboard), "value": sp.value,
                         "passed": sp.passed, "throttled": sp.throttled, "crowded": sp.crowded}
                        for i, (s, sp) in enumerate(fastest)]})
    return sections


# How many rows of a long list show before the rest folds (an HTML <details>, no script).
SHOWN = 12


def help_said(rows: list[dict]) -> str:
    """"12 student(s) need help: 2 not graded; 3 with a kernel rejected for how it got its answer or its time (⚑)",
    each part said only where it counts someone."""
    parts = [f"{n} {what}" for n, what in (
        (sum(r["cell"] is None for r in rows), "not graded"),
        (sum(bool(r["integrity"]) for r in rows), "with a kernel rejected for how it got its answer or its time (⚑)"))
        if n]
    return f"{len(rows)} student(s) need help" + (": " + "; ".join(parts) if parts else "") + "."


def no_speed_said(graded: list[Student]) -> str:
    """Why the report has no speed, true for the class at hand."""
    if not graded:
        return "No speed was measured: no student was graded."
    no_gpu = sum(c.reason == "no-gpu" for s in graded for c in s.cells)
    if no_gpu:
        return (f"No speed was measured: the class was graded without a GPU ({no_gpu} graded cell(s) said "
                "no-gpu).")
    return "No speed was measured: no graded cell reported one."


def retries_said(students: list[Student], retried: list[Student]) -> str | None:
    """The sentence for a run with no retry and no lost kernel, true for the class at hand; None where some were."""
    if retried:
        return None
    recorded = [s for s in students if s.graded and s.seconds is not None]
    if not recorded:
        return "No grading is recorded in the journal for this assignment."
    unrecorded = sum(s.graded and s.seconds is None for s in students)
    said = (f"Each of the {len(recorded)} student(s) the journal records was graded at the first attempt, no kernel "
            "lost.")
    if unrecorded:
        said += (f" {unrecorded} graded student(s) have no record in the journal (a run that stopped before "
                 "recording them).")
    return said


def render(assignment: str, students: list[Student], leaderboard: str = "initials",
           rungs: dict[str, list[Rung]] | None = None, made: str | None = None) -> str:
    """The class report's page for `students` (gather), as one self-contained HTML document."""
    import jinja2

    graded = [s for s in students if s.graded]
    not_graded = [s for s in students if not s.graded]
    rates = pass_rates(graded)
    gpus = Counter(sp.gpu for s in students for sp in s.speeds)
    timed = [s.seconds for s in students if s.seconds is not None]
    scores = [s.score for s in students]   # as grades.csv counts them: a student not graded scores 0
    retried = [s for s in students if s.attempts > 1 or s.notes]
    points = [s.points for s in graded]
    helped = needs_help(students)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2").render(
        assignment=assignment, made=made or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), shown=SHOWN,
        students=students, graded=graded, not_graded=not_graded, leaderboard=leaderboard,
        max_score=max((s.max_score for s in students), default=0.0),
        mean_score=statistics.mean(scores) if scores else None,
        median_score=statistics.median(scores) if scores else None,
        not_checked=class_not_checked(points), lost=sum(p.lost for p in points),
        score_figure=score_figure(students) if students else None, rates=rates,
        rate_figure=pass_rate_figure(rates) if rates else None,
        speeds=speed_sections(graded, recorded_rungs() if rungs is None else rungs, leaderboard),
        no_speed=no_speed_said(graded), help=helped, help_said=help_said(helped),
        integrity=integrity_groups(graded),
        gpus=gpus, workers=sorted({s.worker for s in students if s.worker}),
        timed=len(timed), median_seconds=statistics.median(timed) if timed else None,
        total_seconds=sum(timed), longest=max(timed) if timed else None,
        time_figure=time_figure(students) if timed else None,
        retried=retried, retries=retries_said(students, retried))


def build(ws: Workspace, leaderboard: str = "initials", out: Path | None = None) -> Path:
    """Write the class report of the assignment graded in the workspace `ws`; return its path."""
    if leaderboard not in LEADERBOARD_NAMES:
        raise LadderError(f"--leaderboard {leaderboard!r}: choose one of {', '.join(LEADERBOARD_NAMES)}")
    out = (out or ws.folder / REPORT_NAME).resolve()
    page = render(ws.assignment, gather(ws, out.parent), leaderboard)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
