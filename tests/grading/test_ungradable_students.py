"""`ladder grade` drops no student: a corrupt notebook, an empty file and another chapter's notebook are
each scored 0 with their reason, beside a student who is graded, in grades.csv, the feedback pages, the
summary and the per-cell export (`--csv-cells`); the summary gives each failed cell's reason and message.
One run, here, without Dask (one nbgrader autograde: the good student's)."""

import csv
import shutil

import pytest

from conftest import ROOT
from grading.classroom import ladder_grade, make_class

pytestmark = pytest.mark.slow

REASONS = {"corrupt": "not-a-notebook", "empty": "not-a-notebook", "other": "other-chapter", "good": "graded"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("class")
    subs = make_class(tmp / "subs", {"good": "correct"})
    (subs / "corrupt.ipynb").write_text('{"cells": [{"cell_type": "code", ')
    (subs / "empty.ipynb").write_bytes(b"")
    shutil.copyfile(ROOT / "course" / "07_reductions" / "07_reductions.ipynb", subs / "other.ipynb")
    proc = ladder_grade(subs, tmp / "ws", "--csv-cells", str(tmp / "cells.csv"))
    return tmp, proc


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_student_gets_a_row_with_a_reason(graded):
    """About 30 s on 2 cores: a whole `ladder grade` of a class whose submissions are broken in every way the grader
    names."""
    tmp, proc = graded
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]   # three students could not be graded
    rows = {r["student_id"]: r for r in _rows(tmp / "ws" / "grades.csv")}
    assert {s: r["reason"] for s, r in rows.items()} == REASONS, out[-3000:]
    assert float(rows["good"]["score"]) == 3.0     # on a CPU: the napkin-math and diagnosis cells
    for student in ("corrupt", "empty", "other"):
        assert float(rows[student]["score"]) == 0 and float(rows[student]["max_score"]) == 15
        assert rows[student]["reason_message"].startswith(f"{student}.ipynb ")
    assert "chapter 7's notebook (07_reductions)" in rows["other"]["reason_message"]


def test_every_student_gets_a_feedback_page_in_words(graded):
    tmp, _ = graded
    pages = {p.parts[-3]: p.read_text() for p in (tmp / "ws" / "feedback").glob("*/01_vector_add/*.html")}
    assert set(pages) == set(REASONS)
    assert "Score: 0 of 15." in pages["empty"] and "is empty (0 bytes)" in pages["empty"]
    assert "could not be opened as this course" in pages["corrupt"]
    assert "belongs to another chapter" in pages["other"] and "submit it again" in pages["other"]


def test_the_summary_says_why_for_each_student_and_each_failed_cell(graded):
    _, proc = graded
    lines = proc.stdout.splitlines()
    for student, reason in REASONS.items():
        if reason != "graded":
            assert any(line.startswith(student) and f"[{reason}]" in line for line in lines), proc.stdout[-3000:]
    assert "(1 of 4 student(s) graded)" in proc.stdout
    failed = [line for line in lines if line.strip().startswith("✗ vector-add-visible")]
    assert failed and "[no-gpu] NoGPUError: no GPU found" in failed[0], proc.stdout[-3000:]
    assert "SAWarning" not in proc.stdout + proc.stderr and "Traceback" not in proc.stdout + proc.stderr


def test_the_cells_export_has_each_cell_and_each_ungraded_student(graded):
    tmp, _ = graded
    rows = _rows(tmp / "cells.csv")
    assert list(rows[0]) == ["student", "cell", "points", "max", "passed", "reason", "message"]
    good = {r["cell"]: r for r in rows if r["student"] == "good"}
    assert good["napkin-test"]["passed"] == "True" and good["napkin-test"]["reason"] == ""
    speed = good["vector-add-speed"]
    assert speed["reason"] == "no-gpu" and speed["message"].startswith("NoGPUError") and speed["passed"] == "False"
    for student in ("corrupt", "empty", "other"):
        (row,) = [r for r in rows if r["student"] == student]
        assert row["cell"] == "" and row["reason"] == REASONS[student] and row["passed"] == "False"
