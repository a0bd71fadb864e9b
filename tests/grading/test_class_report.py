"""The class report's readings that need no graded class: a speed cell's report read back, the recorded
rungs, the leaderboard's names and a workspace that is not one. The report of a whole graded class, and
its check in Chromium, are in tests/notebooks/test_grading.py, beside the class that grading builds."""

import json
import statistics
import subprocess
import sys

import pytest

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
