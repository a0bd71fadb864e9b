"""The class's CSV files: nbgrader's grades, one row per student, with why a student was not graded; and,
on request, every student's graded cells with the reason each one failed.

The grades come from nbgrader's own CsvExportPlugin (its columns, its late penalties); the reason columns
are added to its rows, since nbgrader's gradebook has no place for a submission it could not grade.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from .job import StudentGrade

if TYPE_CHECKING:   # the workspace is passed in: importing it here would stack the imports a level deeper
    from .record import Workspace

GRADED = "graded"
CELL_COLUMNS = ("student", "cell", "points", "max", "passed", "reason", "message")


def student_reason(grade: StudentGrade) -> tuple[str, str]:
    """(reason code, first line of the message): `graded` for a graded student."""
    if grade.error is None:
        points = grade.points()
        return GRADED, points.describe() if points.unchecked else ""
    return grade.reason or "not-graded", (grade.error.strip().splitlines() or [""])[0]


POINT_COLUMNS = ("lost_points", "not_checked_points", "not_checked_why")


def points_columns(grade: StudentGrade) -> dict[str, str]:
    """A graded student's points lost, and not checked here with why (grader.notebooks.points): "" for a student
    not graded, whose `reason` says why nothing was checked."""
    if grade.error is not None or not grade.cells:
        return dict.fromkeys(POINT_COLUMNS, "")
    points = grade.points()
    return {"lost_points": f"{points.lost:g}", "not_checked_points": f"{points.unchecked:g}",
            "not_checked_why": points.why_not_checked()}


def write_grades(ws: "Workspace", path: Path, grades: list[StudentGrade]) -> None:
    """nbgrader's grades CSV, with `reason` and `reason_message` columns: `graded` and nothing (or, where this
    machine could not check some cells, "3/3 checked points; 12 points need a GPU"), or why this student scored 0
    without being graded; and the points each graded student lost and those not checked here, with why. Students of
    the gradebook not in this run keep `graded` where the gradebook holds their submission."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ws.export_csv(path)
    why = {g.student: student_reason(g) for g in grades}
    points = {g.student: points_columns(g) for g in grades}
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
        columns = list(rows[0]) if rows else []
    with open(path, "w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=[*(columns or ["student_id"]), "reason", "reason_message", *POINT_COLUMNS])
        out.writeheader()
        for row in rows:
            reason, message = why.get(row["student_id"], (GRADED if row.get("timestamp") else "", ""))
            out.writerow({**row, "reason": reason, "reason_message": message,
                          **points.get(row["student_id"], dict.fromkeys(POINT_COLUMNS, ""))})


def write_cells(path: Path, grades: list[StudentGrade]) -> None:
    """One row per graded cell of each student: points, whether it passed, its reason code and the first
    line of its message; a student nothing could be graded for gets one row without a cell, with the
    student's reason."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(CELL_COLUMNS)
        for g in sorted(grades, key=lambda g: g.student):
            if g.error is not None and not g.cells:
                reason, message = student_reason(g)
                out.writerow([g.student, "", 0, f"{g.max_score:g}", False, reason, message])
            for cell, (points, max_points) in g.cells.items():
                reason, message = g.cell_reasons.get(cell, ("", ""))
                passed = points == max_points
                out.writerow([g.student, cell, f"{points:g}", f"{max_points:g}", passed,
                              "" if passed else reason or "failed", "" if passed else message])
