"""What an instructor watches while a class is graded, and the summary at the end.

A tqdm bar counts students (its rate gives the time left); beside it, how many are done and failed and
who is being graded where, with for how long. The summary lists each student's score with the cells
they lost, then each graded cell's pass rate over the class.
"""

from __future__ import annotations

import time
from collections import Counter

from tqdm.auto import tqdm

from ..notebooks.points import NOT_CHECKED, class_not_checked
from .job import StudentGrade


class Progress:
    def __init__(self, total: int, already: int, echo=print, enabled: bool = True):
        self.echo = echo
        self.bar = tqdm(total=total, unit="student", desc="grading", dynamic_ncols=True, disable=not enabled,
                        smoothing=0.1)
        self.done = self.failed = 0
        self.running: dict[str, tuple[str, float]] = {}   # student -> (where, since)
        if already:
            echo(f"{already} student(s) already graded from the same submission, grader and bars: skipped")

    def started(self, student: str, where: str, since: float | None = None) -> None:
        self.running[student] = (where, since or time.time())
        self._show()

    def finished(self, grade: StudentGrade) -> None:
        self.running.pop(grade.student, None)
        if grade.error:
            self.failed += 1
        else:
            self.done += 1
        self.bar.update(1)
        self._show()

    def note(self, text: str) -> None:
        self.bar.write(text)

    def refresh(self) -> None:
        self._show()

    def _show(self) -> None:
        now = time.time()
        running = ", ".join(f"{where}: {student} {now - since:.0f}s"
                            for student, (where, since) in sorted(self.running.items(), key=lambda kv: kv[1][0]))
        self.bar.set_postfix_str(f"done {self.done}, failed {self.failed}" + (f" | {running}" if running else ""))

    def close(self) -> None:
        self.bar.close()


def summary(grades: list[StudentGrade]) -> list[str]:
    """Per student: score, where and how long, what failed; then per cell: the class's pass rate."""
    lines = []
    for g in sorted(grades, key=lambda g: g.student):
        status = f"{g.score:g}/{g.max_score:g}" + (f"  [{g.reason or 'not-graded'}] ({g.error.splitlines()[0]})"
                                                   if g.error else "")
        how = "already graded" if g.skipped else f"{g.seconds:.0f} s on {g.worker}" if g.worker else ""
        points = g.points()
        unchecked = f"  ({points.describe()})" if g.error is None and points.unchecked else ""
        lines.append(f"{g.student:<20} {status:<12} {how}{unchecked}")
        for note in g.notes:
            lines.append(f"    ~ {note}")
        if g.error and not g.cells:   # not graded at all: the whole reason, which the status line only begins
            rest = g.error.splitlines()[1:]
            lines.extend(f"    | {line}" for line in rest[-60:])
        for loss in g.kernel_losses:
            lines.append(f"    ! {loss}")
        lines.extend(cell_lines(g))
    cells: dict[str, list[str | None]] = {}   # cell -> each graded student's: None (passed), or the reason
    for g in grades:
        if g.error is None:
            for cell, (pts, mx) in g.cells.items():
                cells.setdefault(cell, []).append(None if pts == mx else g.cell_reasons.get(cell, ("failed",))[0])
    if cells:
        graded = sum(1 for g in grades if g.error is None)
        lines.append(f"\npass rate per cell ({graded} of {len(grades)} student(s) graded), of the students it was "
                     "checked for:")
        for cell, outcomes in cells.items():
            unchecked = Counter(r for r in outcomes if r in NOT_CHECKED)
            checked = len(outcomes) - sum(unchecked.values())
            passed = sum(r is None for r in outcomes)
            rate = f"{100 * passed / checked:5.1f}%" if checked else "    –"
            why = ", ".join(f"{n} {reason}" for reason, n in unchecked.most_common())
            lines.append(f"    {cell:<24} {passed:>4}/{checked:<4} {rate}" + (f"  not checked: {why}" if why else ""))
        lines += not_checked_lines(grades)
    timed = [g.seconds for g in grades if not g.skipped and g.worker]
    if timed:
        lines.append(f"\ngrading time per student: median {sorted(timed)[len(timed) // 2]:.0f} s, "
                     f"longest {max(timed):.0f} s")
    return lines


def not_checked_lines(grades: list[StudentGrade]) -> list[str]:
    """The points this machine could not check, apart from those lost (grader.notebooks.points.class_not_checked)."""
    each = [g.points() for g in grades if g.error is None]
    said = class_not_checked(each)
    if said is None:
        return []
    return [f"\nnot checked here, not lost: {said}; points lost in all: {sum(p.lost for p in each):g}"]


def cell_lines(grade: StudentGrade) -> list[str]:
    """A student's graded cells: ✓ or ✗ and points, and for each that failed its reason code and the first
    line of its message, as `ladder check --json` gives them."""
    lines = []
    for cell, (pts, mx) in grade.cells.items():
        line = f"    {'✓' if pts == mx else '✗'} {cell:<24} {pts:g}/{mx:g}"
        if pts != mx and cell in grade.cell_reasons:
            reason, message = grade.cell_reasons[cell]
            line += f"  [{reason}] {message}"
        lines.append(line)
    return lines


def where_time_went(grades: list[StudentGrade], longest: int = 5) -> list[str]:
    """For the instructor: how busy each GPU was from the run's first student to its last (a GPU idle while
    another still works is time the class waited), and the longest students with why they were long
    (grader.classgrade.timing.reasons)."""
    from .timing import reasons

    ran = [g for g in grades if g.started and not g.skipped]
    if not ran:
        return []
    first = min(g.started for g in ran)
    span = max(g.started + g.seconds for g in ran) - first
    if span <= 0:
        return []
    lines = [f"\nwhere the time went ({len(ran)} student(s) graded in {span:.0f} s):"]
    per_gpu: dict[str, list[StudentGrade]] = {}
    for g in ran:
        per_gpu.setdefault(g.worker, []).append(g)
    for worker, mine in sorted(per_gpu.items()):
        busy = sum(g.seconds for g in mine)
        last = max(g.started + g.seconds for g in mine) - first
        lines.append(f"    {worker:<28} busy {100 * busy / span:5.1f}%  ({len(mine)} student(s), {busy:.0f} s; "
                     f"its last finished at {last:.0f} s)")
    lines.append("  longest students:")
    for g in sorted(ran, key=lambda g: -g.seconds)[:longest]:
        why = "; ".join(reasons(g.split)) if g.split else ""
        lines.append(f"    {g.student:<20} {g.seconds:5.0f} s on {g.worker}" + (f": {why}" if why else ""))
    return lines


def outside_students(grades: list[StudentGrade], began: float, workspace_ready: float, ended: float,
                     workers_ready: float | None = None, prepared: dict | None = None) -> list[str]:
    """For the instructor: the run's time before its first student started and after its last ended (epoch
    seconds: `began`, `workspace_ready` once the gradebook held the assignment, `ended` once every record was
    written; `workers_ready` once Dask's workers had started and each had prepared, in `prepared` seconds a
    worker). Why: on four GPUs this was 16-21 s of a 175-192 s class, twice its share on one GPU."""
    ran = [g for g in grades if g.started and not g.skipped]
    if not ran:
        return []
    first = min(g.started for g in ran)
    last = max(g.started + g.seconds for g in ran)
    parts = [f"the workspace prepared in {workspace_ready - began:.1f} s"]
    if workers_ready is not None:
        each = sorted(v for v in (prepared or {}).values() if isinstance(v, (int, float)))
        parts.append(f"{len(each) or 'no'} Dask worker(s) ready at {workers_ready - began:.1f} s"
                     + (f", each prepared in {each[0]:.1f}-{each[-1]:.1f} s" if each else ""))
    return [f"  outside the students: the first started {first - began:.1f} s after the run began ("
            + "; ".join(parts) + f"); the records were written {ended - last:.1f} s after the last ended"]
