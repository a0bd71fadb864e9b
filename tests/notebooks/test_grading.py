"""A whole class autograded through `ladder grade` (isolated, its default), end to end through nbgrader,
on a CPU two students at a time on Dask workers (`--workers 2`, local processes: grader.classgrade), on a
GPU one at a time (the default: `--workers` would have two students share the GPU, and refuses to):
synthetic students in, grades, feedback and a CSV out. No student loses a grade to another's crash,
hang or cheat, and no student loses more than the exercises they broke.

Nine synthetic chapter-1 students (tests/submissions/ch01), graded in one run: correct, wrong,
stub (the released notebook), compile_error, killer (the notebook kernel dies in one cell), crasher
(an illegal memory access in 1a), hanger (a 1a kernel that never ends), cheater (torch computes 1a's
answer) and tampered (test cells deleted and edited). Time limits are short here so that the hanging
student costs seconds, not the default minutes. LADDER_CLASS=correct,hanger,... grades only those
students (a shorter run on a GPU). On a CPU only the napkin-math cells can earn points, which is enough
to tell the students apart.
"""

import csv
import json
import os
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import browser
from conftest import HAS_GPU, ROOT
from submissions.build import build

pytestmark = pytest.mark.slow

ALL = ("correct", "wrong", "stub", "compile_error", "killer", "crasher", "hanger", "cheater", "tampered")
STUDENTS = tuple(s for s in os.environ.get("LADDER_CLASS", ",".join(ALL)).split(",") if s in ALL)
ONE_A = ("vector-add-visible", "vector-add-hidden", "vector-add-speed")

# Full marks are 15; 1a's three cells are 6 points; the napkin cells and the diagnosis 1 point each (every
# student but the stub keeps the solution's diagnosis).
# wrong: only 1.1 (1.0, 1a and 1b are wrong). compile_error: everything but 1a's three cells.
# tampered: kernels right, both napkin cells wrong on the original tests (restored and re-added).
# The killer's notebook kernel dies in its fusion napkin cell, after the cell defined both functions:
# in the notebook, the fresh kernel that carries on never has them, and the isolated check leaves that
# cell out for the same reason (grader.notebooks.nbexec passes on how each cell ended), so its test
# scores 0 on both paths, as tests/notebooks/test_kernel_death.py's in-kernel grading of the same student does.
GPU_SCORES = {"correct": 15, "wrong": 2, "stub": 0, "compile_error": 9, "killer": 14, "crasher": 9, "hanger": 9,
              "cheater": 9, "tampered": 13}
CPU_SCORES = {"correct": 3, "wrong": 2, "stub": 0, "compile_error": 3, "killer": 2, "crasher": 3, "hanger": 3,
              "cheater": 3, "tampered": 1}
# Why 1a fails, for the students who broke it on purpose (on a GPU; without one every GPU cell says no-gpu).
GPU_REASONS = {"crasher": "crashed", "hanger": "timed-out", "cheater": "library-compute"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("class")
    for name in STUDENTS:
        build("ch01", "01_vector_add", name, tmp / "submissions" / f"{name}.ipynb")
    env = dict(os.environ, LADDER_CELL_TIMEOUT_S="45", LADDER_FIRST_CALL_TIMEOUT_S="20",
               LADDER_CALL_TIMEOUT_S="20", LADDER_CACHE_DIR=str(tmp / "cache"))
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(tmp / "submissions"),
                           "--assignment", "01_vector_add", "--workspace", str(tmp / "ws"), "--no-progress",
                           *([] if HAS_GPU else ["--workers", "2"])],
                          capture_output=True, text=True, cwd=ROOT, timeout=3600, env=env)
    return tmp / "ws", proc


def _scores(ws) -> dict:
    with open(ws / "grades.csv") as fh:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)}


def _cells(ws, student) -> dict:
    """grade_id -> (points, error text) of a student's autograded notebook."""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook("01_vector_add", "01_vector_add", student)
        points = {g.name: float(g.score or 0) for g in sub.grades if g.max_score}
    nb = json.loads((ws / "autograded" / student / "01_vector_add" / "01_vector_add.ipynb").read_text())
    errors = {}
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        errors[gid] = "\n".join(o.get("evalue", "") for o in cell.get("outputs", []) if o["output_type"] == "error")
    return {gid: (p, errors.get(gid, "")) for gid, p in points.items()}


def test_every_student_gets_exactly_the_points_of_the_exercises_they_did_not_break(graded):
    """The first of the module's tests to ask for the class's grading pays for it (60 to 120 s on 2 cores: nine
    students, each a notebook's kernel and its isolated checks, on two Dask workers); the module's other tests read the
    same grading."""
    ws, proc = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    expected = GPU_SCORES if HAS_GPU else CPU_SCORES
    assert _scores(ws) == {s: expected[s] for s in STUDENTS}, proc.stdout[-3000:]
    with open(ws / "grades.csv") as fh:
        assert {float(r["max_score"]) for r in csv.DictReader(fh)} == {15.0}


def test_the_correct_student_loses_nothing_to_the_others(graded):
    if "correct" not in STUDENTS:
        pytest.skip("correct is not in LADDER_CLASS")
    ws, _ = graded
    lost = {gid: err for gid, (p, err) in _cells(ws, "correct").items() if p == 0 and "no GPU found" not in err}
    assert not lost, lost


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU: without one every 1a cell fails with no-gpu")
@pytest.mark.gpu
@pytest.mark.parametrize("student", sorted(GPU_REASONS))
def test_a_broken_1a_fails_1a_alone_for_its_reason(graded, student):
    if student not in STUDENTS:
        pytest.skip(f"{student} is not in LADDER_CLASS")
    ws, proc = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = _cells(ws, student)
    for gid in ONE_A:
        points, err = cells[gid]
        assert points == 0 and f"[reason: {GPU_REASONS[student]}]" in err, (gid, err)
    others = {gid: err for gid, (p, err) in cells.items() if gid not in ONE_A and p == 0}
    assert not others, f"{student} lost points outside 1a: {others}"


@pytest.mark.skipif(HAS_GPU, reason="CPU expectations")
def test_without_a_gpu_every_gpu_cell_says_so(graded):
    ws, _ = graded
    for student in {"correct", "crasher", "hanger", "cheater"} & set(STUDENTS):
        for gid in ONE_A:
            points, err = _cells(ws, student)[gid]
            assert points == 0 and "[reason: no-gpu]" in err, (student, gid, err)


@pytest.mark.skipif(HAS_GPU, reason="CPU expectations")
def test_feedback_says_no_gpu_and_quotes_compile_errors(graded):
    ws, _ = graded
    if not {"correct", "compile_error", "stub"} <= set(STUDENTS):
        pytest.skip("correct, compile_error and stub are not all in LADDER_CLASS")
    correct = (ws / "feedback/correct/01_vector_add/01_vector_add.html").read_text()
    assert "no GPU found" in correct and "What still works without a GPU" in correct
    broken = (ws / "feedback/compile_error/01_vector_add/01_vector_add.html").read_text()
    assert "did not compile" in broken and 'identifier "idx" is undefined' in broken
    stub = (ws / "feedback/stub/01_vector_add/01_vector_add.html").read_text()
    assert "not written yet" in stub


def test_the_dying_kernel_and_the_deleted_tests_are_reported(graded):
    ws, proc = graded
    if "killer" in STUDENTS:
        assert "killer" in proc.stdout and "the notebook's kernel died" in proc.stdout
    for student in STUDENTS:
        assert (ws / "feedback" / student / "01_vector_add" / "01_vector_add.html").is_file(), student
    if "tampered" not in STUDENTS:
        pytest.skip("tampered is not in LADDER_CLASS")
    nb = json.loads((ws / "autograded/tampered/01_vector_add/01_vector_add.ipynb").read_text())
    sources = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in nb["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("grade")}
    assert "check_napkin_math" in sources["napkin-test"], "the deleted test cell was added back"
    assert "check_fusion_napkin_math" in sources["fusion-napkin-test"], "the edited test cell was restored"


def test_each_student_s_time_is_split_in_the_journal_and_the_summary_says_where_it_went(graded):
    import sqlite3

    ws, proc = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with sqlite3.connect(ws / "gradebook.db") as conn:
        rows = dict(conn.execute("SELECT student, split FROM ladder_grading_split"))
        started = dict(conn.execute("SELECT student, started FROM ladder_grading_split"))
    assert set(rows) == set(STUDENTS)
    for student, raw in rows.items():
        split = json.loads(raw)
        assert split["seconds"] > 0 and split["cpu_seconds"] > 0 and split["cpus"] >= 1, (student, split)
        assert split["kernel_seconds"] > 0 and split["around_notebook_seconds"] >= 0, (student, split)
        # how wide its checks ran ahead (1 on a 2-CPU machine: none ahead, so no slot was asked for)
        assert split["checks_at_once"] >= 1 and "slot_wait_seconds" in split, (student, split)
        assert started[student] > 0
        if student in ("correct", "stub"):   # every check of theirs ran, and reports its CPU time
            assert split["check_seconds"] > 0 and split["check_cpu_seconds"] > 0, (student, split)
    assert f"where the time went ({len(STUDENTS)} student(s) graded in" in proc.stdout
    assert proc.stdout.count("% ") >= 1 and "busy" in proc.stdout   # a busy fraction per worker
    assert "longest students:" in proc.stdout


def test_submitted_tree_layout_is_accepted(tmp_path):
    from grader.classgrade.run import collect_submissions
    nb = tmp_path / "submitted" / "alice" / "01_vector_add" / "01_vector_add.ipynb"
    nb.parent.mkdir(parents=True)
    nb.write_text("{}")
    assert collect_submissions(tmp_path / "submitted", "01_vector_add", "01_vector_add.ipynb") == {"alice": nb}


# ------------------------------------------------------------------------------------------- class report

class _Page(HTMLParser):
    """The class report's tables (rows of cell texts), help and integrity groups, links and images."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.groups: dict[str, list[tuple[str, list[str]]]] = {"help": [], "integrity": []}
        self.section = None
        self._table = self._row = self._cell = None
        self._group_head: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self.section = attrs.get("id")
        elif tag == "table":
            self._table = self.tables.setdefault(attrs.get("id") or f"table-{len(self.tables)}", [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "div" and attrs.get("class") == "group" and self.section in self.groups:
            self._group_head = []
            self.groups[self.section].append(("", []))
        elif tag == "a" and self.section in self.groups and self.groups[self.section]:
            self.groups[self.section][-1][1].append(attrs["href"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = self._row = None
        elif tag == "b" and self._group_head is not None:
            head, links = self.groups[self.section][-1]
            self.groups[self.section][-1] = (" ".join("".join(self._group_head).split()), links)
            self._group_head = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._group_head is not None:
            self._group_head.append(data)


def _failures(ws) -> dict[tuple[str, str], set[str]]:
    """(grade_id, reason) -> the students whose autograded cell failed for it, from the `[reason: ...]` line of
    each failed graded cell's error (or its stderr), read here without the grader's own reading."""
    import re

    found: dict[tuple[str, str], set[str]] = {}
    for nb_path in (ws / "autograded").glob("*/01_vector_add/01_vector_add.ipynb"):
        student = nb_path.parts[-3]
        for cell in json.loads(nb_path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if not meta.get("grade") or cell["cell_type"] != "code":
                continue
            errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
            stderr = [o for o in cell.get("outputs", []) if o.get("name") == "stderr"]
            if errors:
                reasons = re.findall(r"\[reason: ([a-z0-9-]+)", errors[0].get("evalue", ""))
                found.setdefault((meta["grade_id"], reasons[-1] if reasons else "?"), set()).add(student)
            elif stderr:
                found.setdefault((meta["grade_id"], "stderr"), set()).add(student)
    return found


def test_the_class_report_agrees_with_grades_csv_and_the_autograded_notebooks(graded):
    from grader.classgrade.report import INTEGRITY
    from grader.notebooks.points import NOT_CHECKED

    ws, proc = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"class report: {ws / 'report.html'}" in proc.stdout
    page = _Page()
    page.feed((ws / "report.html").read_text())
    scores = _scores(ws)
    text = " ".join((ws / "report.html").read_text().split())
    assert f"{len(scores)} student(s): {len(scores)} graded, 0 not graded" in text
    assert (f"mean {statistics.mean(scores.values()):.1f}, median {statistics.median(scores.values()):g}, over all "
            f"{len(scores)} student(s)") in text

    # Per cell: the pass rate over the students it was checked for, the share of them each reason failed, and how
    # many this machine could not check (without a GPU, every GPU cell: no-gpu).
    failures = _failures(ws)
    rows = {row[0]: row for row in page.tables["pass-rates"][1:]}
    cells = [gid for gid, _ in _cells(ws, STUDENTS[0]).items()]
    assert sorted(rows) == sorted(cells)
    for gid in cells:
        failed = {reason: students for (cell, reason), students in failures.items() if cell == gid}
        unchecked = {reason: students for reason, students in failed.items() if reason in NOT_CHECKED}
        checked = len(STUDENTS) - sum(len(s) for s in unchecked.values())
        lost = sum(len(s) for reason, s in failed.items() if reason not in NOT_CHECKED)
        assert rows[gid][2] == (f"{100 * (checked - lost) / checked:.0f}%" if checked else "–"), (gid, rows[gid])
        for reason, students in failed.items():
            if reason in NOT_CHECKED:
                assert f"{len(students)} {reason}" in rows[gid][4], (gid, reason, rows[gid])
            else:
                assert f"{100 * len(students) / checked:.0f}% {reason}" in rows[gid][3], (gid, reason, rows[gid])

    # Who needs help: one line a student who lost points, their first such cell in the notebook's order, linked.
    order = {gid: i for i, gid in enumerate(cells)}
    first: dict[str, tuple[str, str]] = {}
    for (gid, reason), students in sorted(failures.items(), key=lambda kv: order[kv[0][0]]):
        for student in students:
            if reason not in NOT_CHECKED:
                first.setdefault(student, (gid, reason))
    help_rows = {row[0]: (row[2], row[3].rstrip(" ⚑")) for row in page.tables["help-table"][1:]}
    assert help_rows == first, (help_rows, first)

    def grouped(section):
        return {head: {href.split("/")[1] for href in links} for head, links in page.groups[section]}

    expected_integrity = {f"{reason} in {gid}": students for (gid, reason), students in failures.items()
                          if reason in INTEGRITY}
    assert {head.rsplit(" (", 1)[0]: who for head, who in grouped("integrity").items()} == expected_integrity
    if HAS_GPU and "cheater" in STUDENTS:
        assert expected_integrity.get("library-compute in vector-add-speed") == {"cheater"}
    if "killer" in STUDENTS:
        retries = text.split("Retries, and cells whose kernel was lost", 1)[1].split("Not graded", 1)[0]
        assert "<b>killer</b>" in retries and "kernel died" in retries


def test_the_class_report_opens_in_chromium_with_every_figure_and_link(graded, tmp_path):
    from urllib.parse import unquote, urlparse

    sync_playwright, chromium = browser.chromium()
    ws, proc = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = ws / "report.html"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1100, "height": 900})
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("requestfailed", lambda r: problems.append(f"{r.url}: {r.failure}"))
        page.goto(report.as_uri(), wait_until="load")
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete, e.naturalWidth, "
                                                  "e.naturalHeight, e.src.slice(0, 22)])")
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        b.close()
    assert not problems, problems
    assert len(images) >= 3, images   # the scores, the pass rates, the time per student
    for alt, complete, width, height, src in images:
        assert complete and width > 0 and height > 0 and src == "data:image/png;base64,", (alt, src)
    assert links, "no feedback page is linked"
    for href in links:
        url = urlparse(href)
        assert url.scheme == "file", href   # nothing on the network
        target = Path(unquote(url.path))
        assert target.is_file(), href
        if url.fragment:
            assert f'id="{unquote(url.fragment)}"' in target.read_text(), href
