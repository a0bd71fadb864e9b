"""The class report's readings that need no graded class: a speed cell's report read back, the recorded
rungs, the leaderboard's names and a workspace that is not one. The report of a whole graded class, and
its check in Chromium, are in tests/notebooks/test_grading.py, beside the class that grading builds."""

import json
import statistics
import subprocess
import sys

import pytest

import browser
from conftest import ROOT
from grader.classgrade import report
from grader.harness.results import SpeedResult
from grader.harness.timing import Comparison, Timing


def _speed_result(candidate_ms: float, bar: float) -> SpeedResult:
    cmp = Comparison(Timing("yours", [candidate_ms] * 5), Timing("torch.mm", [1.0] * 5), {}, 5, 1.0, "cuda")
    return SpeedResult(key="5a", title="Triton matmul", size="M=N=K=4096", gpu="NVIDIA H100 80GB HBM3",
                       comparison=cmp, bar=bar, graded=True, passed=cmp.speedup >= bar, bytes_moved=3 * 2 * 4096 ** 2,
                       flops=2 * 4096 ** 3, ceiling_name="fp16_tflops", ceiling_value=676.0, baseline_name="torch.mm")


def _graded_cell(grade_id: str, outputs: list[dict]):
    from nbformat.v4 import new_code_cell, new_output

    cell = new_code_cell("ch05.check_matmul_speed(matmul)", outputs=[new_output(**o) for o in outputs])
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": grade_id, "points": 2}
    return cell


def test_a_speed_cell_is_read_back_from_its_own_report_passed_or_below_the_bar():
    from nbformat.v4 import new_notebook

    from grader.notebooks.check import grade_cells

    passed = _speed_result(1.25, 0.75)      # 0.80x
    below = _speed_result(2.0, 0.75)        # 0.50x
    nb = new_notebook(cells=[
        _graded_cell("passed", [{"output_type": "stream", "name": "stdout", "text": passed.report() + "\n"}]),
        _graded_cell("below", [{"output_type": "error", "ename": "CheckFailed", "traceback": [],
                                "evalue": below.report() + "\nNeeds at least 0.75x torch.mm.\n[reason: below-bar]"}]),
        _graded_cell("unmeasured", [{"output_type": "stream", "name": "stdout", "text": "correct\n"}])])
    got = [report.speed_from(c) for c in grade_cells(nb)]
    assert (got[0].exercise, got[0].value, got[0].bar, got[0].passed, got[0].gpu) == (
        "5a", 0.8, 0.75, True, "NVIDIA H100 80GB HBM3")
    assert (got[1].exercise, got[1].value, got[1].passed) == ("5a", 0.5, False)
    assert got[2] is None


def test_the_recorded_rungs_are_the_medians_of_their_calibration_runs():
    data = json.loads((ROOT / "assets/results/calibration/ch05-h200/ch05-calibration.json").read_text())
    solution = next(r for r in data["rungs"] if r["bar_key"] == "5a" and r["rung"].endswith("(solution)"))
    recorded = report.recorded_rungs(ROOT / "assets" / "results")
    rungs = {r.name: r for r in recorded["5a"] if r.gpu == data["gpu"]}
    assert {"naive_5a", "solution"} <= set(rungs)
    assert rungs["solution"].value == statistics.median(r["speedup"] for r in solution["runs"])
    five_b = json.loads((ROOT / "assets/results/calibration/ch05-5b-sm90/h100/ch05-5b-calibration.json").read_text())
    assert five_b["gpu"] in {r.gpu for r in recorded["5b"]} and data["gpu"] in {r.gpu for r in recorded["5b"]}


def test_the_recorded_rungs_include_ladder_calibrates_own_records():
    """`ladder calibrate --out NAME.toml` keeps its runs in NAME.json, a layout of its own: a class graded on the
    GPU of such a record is set beside that GPU's rungs."""
    data = json.loads((ROOT / "assets/results/calibration/course-h100x4/bars-override-4-5-6.json").read_text())
    bar = next(b for b in data["bars"] if b["key"] == "5a")
    solution = next(r for r in bar["rungs"] if r["label"].endswith("(solution)"))
    rungs = {r.name: r for r in report.recorded_rungs(ROOT / "assets" / "results")["5a"] if r.gpu == data["gpu"]}
    assert rungs["solution"].value == statistics.median(solution["speedups"])
    assert "naive_5a" in rungs and rungs["naive_5a"].value < 0.75 < rungs["solution"].value


def test_the_leaderboard_shows_names_initials_or_nothing():
    assert [report.shown_name("ada_lovelace", s) for s in report.LEADERBOARD_NAMES] == ["ada_lovelace", "AL", ""]
    assert report.initials("grace") == "G"


def test_a_folder_that_is_not_a_grading_workspace_is_named_without_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "report", str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "is not a grading workspace" in proc.stderr and "Traceback" not in proc.stderr


def test_an_unknown_leaderboard_setting_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "report", str(tmp_path), "--leaderboard", "surnames"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and "invalid choice: 'surnames'" in proc.stderr, proc.stderr


def _student(name: str, *speeds: report.Speed) -> report.Student:
    return report.Student(name, 0.0, 15.0, [], {}, list(speeds), {}, None)


@pytest.mark.parametrize("setting", report.LEADERBOARD_NAMES)
def test_each_exercise_gets_its_speeds_against_the_bar_and_its_fastest_kernels_in_order(setting):
    gpu = "NVIDIA H100 80GB HBM3"
    class_ = [_student("ada_l", report.Speed("5a", 0.9, 0.75, gpu, True)),
              _student("bo", report.Speed("5a", 0.6, 0.75, gpu, False), report.Speed("5b", 1.3, 1.1, gpu, True)),
              _student("cy", report.Speed("5a", 1.0, 0.75, gpu, True))]
    rungs = {"5a": [report.Rung("naive_5a", 0.2, "NVIDIA H200"), report.Rung("solution", 0.9, gpu)]}
    sections = {s["exercise"]: s for s in report.speed_sections(class_, rungs, setting)}
    assert sorted(sections) == ["5a", "5b"]
    five_a = sections["5a"]
    assert (five_a["count"], five_a["passed"], five_a["median"], five_a["bar"]) == (3, 2, 0.9, 0.75)
    assert [r.name for r in five_a["rungs"]] == ["solution"]   # the rungs measured on the class's GPU
    assert [r["value"] for r in five_a["leaders"]] == [1.0, 0.9, 0.6]
    assert [r["who"] for r in five_a["leaders"]] == {"names": ["cy", "ada_l", "bo"], "initials": ["C", "AL", "B"],
                                                      "none": ["", "", ""]}[setting]
    assert five_a["figure"].startswith("data:image/png;base64,")
    assert sections["5b"]["rungs"] == []


def test_why_a_student_was_not_graded_is_kept_for_the_report_until_a_run_grades_them(tmp_path):
    from grader.classgrade.job import StudentGrade
    from grader.classgrade.record import Workspace

    ws = Workspace(tmp_path / "ws", "01_vector_add", "01_vector_add.ipynb")
    try:
        ws.record_not_graded([StudentGrade("ada", 0.0, 0.0, {}, None, "not graded: the worker died 3 time(s)"),
                              StudentGrade("bo", 3.0, 15.0, {"napkin-test": (1.0, 1.0)}, None)])
        assert ws.not_graded() == {"ada": "not graded: the worker died 3 time(s)"}
        ws.record_not_graded([StudentGrade("ada", 3.0, 15.0, {}, None)])
        assert ws.not_graded() == {}
    finally:
        ws.close()


# ------------------------------------------------------------------------------------ the page, true for the class

def _cells(*outcomes: tuple[str, float, float, str | None]):
    from grader.notebooks.check import CellResult

    return [CellResult(gid, pts, most, "pass" if reason is None else "fail", None if reason is None else
                       {"ename": "CheckFailed", "evalue": f"{gid} went wrong\n[reason: {reason}]"}, reason=reason)
            for gid, pts, most, reason in outcomes]


def _graded(name: str, *outcomes, seconds: float | None = 20.0) -> report.Student:
    cells = _cells(*outcomes)
    return report.Student(name, sum(c.points for c in cells), sum(c.max_points for c in cells), cells,
                          {c.grade_id: f"id-{c.grade_id}" for c in cells}, [],
                          {c.grade_id: f"{c.grade_id} went wrong" for c in cells if c.reason}, f"feedback/{name}.html",
                          seconds=seconds, worker="host GPU 0" if seconds is not None else "")


def _not_graded(name: str, why: str = "the file is empty") -> report.Student:
    return report.Student(name, 0.0, 15.0, [], {}, [], {}, f"feedback/{name}.html", why=why)


def _page(students) -> str:
    return " ".join(report.render("01_vector_add", students, rungs={}).split())


def test_an_empty_class_claims_nothing():
    text = _page([])
    assert "0 student(s): 0 graded, 0 not graded" in text and "No student is in the gradebook" in text
    for claim in ("Every graded student passed", "Every student was graded", "first attempt", "mean"):
        assert claim not in text, claim


def test_a_class_nobody_could_grade_says_so_and_lists_them():
    text = _page([_not_graded("ada"), _not_graded("bo", "another chapter's notebook (07_reductions)")])
    assert "2 student(s): 0 graded, 2 not graded" in text
    assert "mean 0.0, median 0, over all 2 student(s) (2 not graded, counted as" in text
    assert "Every graded student passed" not in text and "Every student was graded" not in text
    assert "No speed was measured: no student was graded." in text
    assert ('<b><a href="feedback/bo.html">bo</a></b>: <span class="message">another chapter&#39;s notebook '
            "(07_reductions)</span>") in text


def test_students_not_graded_count_in_the_statistics_as_grades_csv_counts_them():
    text = _page([_graded("ada", ("a", 15, 15, None)), _graded("bo", ("a", 9, 15, "wrong-result")), _not_graded("cy")])
    assert "3 student(s): 2 graded, 1 not graded" in text
    assert "mean 8.0, median 9, over all 3 student(s) (1 not graded" in text


def test_a_run_that_stopped_before_recording_claims_no_first_attempt():
    stopped = _page([_graded("ada", ("a", 1, 1, None), seconds=None), _graded("bo", ("a", 1, 1, None), seconds=None)])
    assert "first attempt" not in stopped and "No grading is recorded in the journal for this assignment." in stopped
    part = _page([_graded("ada", ("a", 1, 1, None)), _graded("bo", ("a", 1, 1, None), seconds=None)])
    assert ("Each of the 1 student(s) the journal records was graded at the first attempt, no kernel lost. 1 graded "
            "student(s) have no record in the journal") in part


def test_who_needs_help_is_one_line_a_student_their_first_lost_cell_linked():
    ada = _graded("ada", ("napkin", 1, 1, None), ("1a-visible", 0, 2, "no-gpu"), ("1a-hidden", 0, 2, "out-of-bounds"),
                  ("1b-visible", 0, 2, "wrong-result"), ("1b-speed", 0, 2, "library-compute"))
    bo = _graded("bo", ("napkin", 1, 1, None), ("1a-visible", 0, 2, "no-gpu"))   # lost nothing: not listed
    rows = report.needs_help([ada, bo, _not_graded("cy")])
    assert [r["name"] for r in rows] == ["cy", "ada"]   # the lowest score first
    assert (rows[1]["cell"], rows[1]["reason"], rows[1]["more"]) == ("1a-hidden", "out-of-bounds", 2)
    assert rows[1]["link"] == "feedback/ada.html#cell-id=id-1a-hidden"
    assert rows[1]["integrity"], "one of ada's lost cells (1b-speed) is an integrity rejection: marked"
    assert report.help_said(rows) == ("2 student(s) need help: 1 not graded; 1 with a kernel rejected for how it got "
                                      "its answer or its time (⚑).")
    assert report.help_said(rows[1:2]) == "1 student(s) need help: 1 with a kernel rejected for how it got its answer " \
                                          "or its time (⚑)."
    text = _page([ada, bo])
    assert text.count('<tr><td><a href="feedback/') == 1 and "+2&nbsp;more" in text


def test_points_not_checked_are_said_apart_from_points_lost():
    no_gpu = [_graded(name, ("napkin", 1, 1, None), ("1a-visible", 0, 2, "no-gpu"), ("1a-speed", 0, 2, "no-gpu"))
              for name in ("ada", "bo")]
    text = _page(no_gpu)
    assert ("Not checked here, not lost: every graded student, 4 of 5 points (4 points need a GPU). Points lost, all "
            "graded students together: 0.") in text
    assert "Every graded student passed every graded cell that could be checked here" in text
    assert "No speed was measured: the class was graded without a GPU (4 graded cell(s) said no-gpu)." in text
    rates = {r["cell"]: r for r in report.pass_rates(no_gpu)}
    assert rates["1a-speed"]["pass_pct"] is None and rates["1a-speed"]["not_checked"] == [("no-gpu", 2)]
    assert rates["napkin"]["pass_pct"] == 100.0


# ------------------------------------------------------------------------------------ a class of 200

@pytest.fixture(scope="module")
def class_of_200(tmp_path_factory):
    """A class of 200 written straight into a grading workspace (tests/grading/synthetic_gradebook.py), its
    report built by `ladder report`'s own function. About 15 s on a 2-core machine, most of it nbgrader
    generating the assignment and the report's figures."""
    from synthetic_gradebook import build_class, class_of

    students = class_of(200)
    ws = build_class(tmp_path_factory.mktemp("class200") / "ws", students)
    try:
        page = report.build(ws)
        csv_path = ws.folder / "export.csv"
        ws.export_csv(csv_path)
    finally:
        ws.close()
    return students, page, csv_path


def test_a_class_of_200_folds_its_long_lists_and_agrees_with_grades_csv(class_of_200):
    import csv
    import re

    students, page, csv_path = class_of_200
    html = page.read_text()
    text = " ".join(html.split())
    with open(csv_path) as fh:
        scores = [float(row["score"]) for row in csv.DictReader(fh)]
    not_graded = [n for n, s in students.items() if s.why]
    assert len(scores) == 200 and not_graded
    assert f"200 student(s): {200 - len(not_graded)} graded, {len(not_graded)} not graded" in text
    assert f"mean {statistics.mean(scores):.1f}, median {statistics.median(scores):g}, over all 200 student(s)" in text
    needing = {n for n, s in students.items() if s.why or s.failed}
    listed = re.findall(r'<tr><td><a href="feedback/([^/]+)/', html)
    assert sorted(listed) == sorted(needing), "one line for each student who lost points or was not graded"
    shown = html.split('id="help-table"', 1)[1].split("</table>", 1)[0]
    assert shown.count("<tr><td>") == report.SHOWN and '<details id="help-more">' in html
    assert f"{len(needing) - report.SHOWN} more student(s)" in text


def test_a_class_of_200_reads_in_one_screen_in_chromium(class_of_200, tmp_path):
    """The first screen holds where the class stands and the start of who needs help; the page, its long lists
    folded, stays a few screens long. The screenshots are left in the test's folder, to look at."""
    sync_playwright, chromium = browser.chromium()
    _, page, _ = class_of_200
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        tab = b.new_page(viewport={"width": 1100, "height": 900})
        problems = []
        tab.on("pageerror", lambda exc: problems.append(str(exc)))
        tab.on("requestfailed", lambda r: problems.append(f"{r.url}: {r.failure}"))
        tab.goto(page.as_uri(), wait_until="load")
        tab.screenshot(path=str(tmp_path / "first-screen.png"))
        tab.screenshot(path=str(tmp_path / "report-200.png"), full_page=True)
        height = tab.evaluate("document.documentElement.scrollHeight")
        help_top = tab.eval_on_selector("#help-table", "e => e.getBoundingClientRect().top")
        summary_top = tab.eval_on_selector("#help-summary", "e => e.getBoundingClientRect().top")
        images = tab.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete, e.naturalWidth])")
        folded = tab.eval_on_selector("#help-more", "e => e.open")
        b.close()
    assert not problems, problems
    assert summary_top < 900 and help_top < 900, (summary_top, help_top)
    assert height < 5 * 900, f"{height} px: a class of 200 must stay a few screens long with its lists folded"
    assert not folded and all(complete and width > 0 for _, complete, width in images), images
