"""`ladder grade` drives nbgrader end to end: synthetic students in, grades, feedback and CSV out.

On a CPU only the napkin-math cells can earn points, which is enough to tell the students apart;
the GPU test in test_gpu.py asserts full marks for the correct student.
"""

import csv
import json
import subprocess
import sys

import pytest

from conftest import HAS_GPU, ROOT
from submissions.build import build

pytestmark = pytest.mark.slow

STUDENTS = ("correct", "wrong", "stub", "compile_error", "tampered")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grading")
    for name in STUDENTS:
        build("ch01", "01_vector_add", name, tmp / "submissions" / f"{name}.ipynb")
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(tmp / "submissions"),
                           "--assignment", "01_vector_add", "--workspace", str(tmp / "ws")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    return tmp / "ws", proc


def _scores(ws):
    with open(ws / "grades.csv") as fh:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)}


def test_every_student_is_graded_and_exported(graded):
    ws, proc = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scores = _scores(ws)
    assert set(scores) == set(STUDENTS)
    with open(ws / "grades.csv") as fh:
        max_scores = {float(r["max_score"]) for r in csv.DictReader(fh)}
    assert max_scores == {14.0}


@pytest.mark.skipif(HAS_GPU, reason="CPU expectations")
def test_cpu_grades_tell_students_apart(graded):
    ws, _ = graded
    scores = _scores(ws)
    assert scores["correct"] == 2      # both napkin-math cells; every GPU cell scores 0 without a GPU
    assert scores["wrong"] == 1        # 1.0 wrong, 1.1 right
    assert scores["stub"] == 0
    assert scores["compile_error"] == 2
    assert scores["tampered"] == 0     # graded on the original napkin tests, restored and re-added


@pytest.mark.skipif(HAS_GPU, reason="CPU expectations")
def test_feedback_says_no_gpu_and_quotes_compile_errors(graded):
    ws, _ = graded
    correct = (ws / "feedback/correct/01_vector_add/01_vector_add.html").read_text()
    assert "no GPU found" in correct and "What still works without a GPU" in correct
    broken = (ws / "feedback/compile_error/01_vector_add/01_vector_add.html").read_text()
    assert "did not compile" in broken and 'identifier "idx" is undefined' in broken
    stub = (ws / "feedback/stub/01_vector_add/01_vector_add.html").read_text()
    assert "not written yet" in stub


def test_deleted_and_edited_test_cells_are_restored(graded):
    ws, _ = graded
    nb = json.loads((ws / "autograded/tampered/01_vector_add/01_vector_add.ipynb").read_text())
    tests = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in nb["cells"]
             if c.get("metadata", {}).get("nbgrader", {}).get("grade")}
    assert "check_napkin_math" in tests["napkin-test"], "the deleted test cell was added back"
    assert "check_fusion_napkin" in tests["fusion-napkin-test"], "the edited test cell was restored"


def test_submitted_tree_layout_is_accepted(tmp_path):
    from grader.grading import collect_submissions
    nb = tmp_path / "submitted" / "alice" / "01_vector_add" / "01_vector_add.ipynb"
    nb.parent.mkdir(parents=True)
    nb.write_text("{}")
    assert collect_submissions(tmp_path / "submitted", "01_vector_add", "01_vector_add.ipynb") == {"alice": nb}


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
@pytest.mark.gpu
def test_gpu_grades(graded):
    ws, _ = graded
    scores = _scores(ws)
    assert scores["correct"] == 14
    assert scores["stub"] == 0
    assert scores["wrong"] == 1        # only 1.1; 1.0, 1a and 1b are wrong
    assert scores["compile_error"] == 8   # everything but 1a's three cells (6 points)
    assert scores["tampered"] == 12       # kernels right, both napkin cells wrong on the original tests
