"""The chapter-1 verdicts on a real GPU (skipped without one)."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT, ladder_check_one
from submissions.build import build

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_solution_passes_every_graded_cell():
    code, _, cells = ladder_check_one(ROOT / "solutions/01_vector_add/01_vector_add.ipynb")
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert all(c["outcome"] == "pass" for c in cells.values())


def test_released_notebook_fails_every_graded_cell_with_not_implemented():
    code, _, cells = ladder_check_one(ROOT / "course/01_vector_add/01_vector_add.ipynb")
    assert code == 1
    for c in cells.values():
        assert c["error"] and c["error"]["ename"] == "NotImplementedYet", c


def test_naive_vector_add_passes_1a(tmp_path):
    _, _, cells = ladder_check_one(build("ch01", "01_vector_add", "naive_1a", tmp_path / "naive_1a.ipynb"))
    for gid in ("vector-add-visible", "vector-add-hidden", "vector-add-speed"):
        assert cells[gid]["passed"], cells[gid]


def test_three_kernel_1b_is_correct_but_too_slow(tmp_path):
    _, _, cells = ladder_check_one(build("ch01", "01_vector_add", "three_kernels_1b", tmp_path / "three.ipynb"))
    assert cells["fused-visible"]["passed"] and cells["fused-hidden"]["passed"]
    speed = cells["fused-speed"]
    assert not speed["passed"] and "below the bar" in speed["error"]["evalue"], speed


def test_doctor_measures_ceilings():
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "doctor", "--json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["gpu"]["name"]
    assert report["ceilings"]["copy_gbps"] > 100 and report["ceilings"]["fp16_tflops"] > report["ceilings"]["fp32_tflops"]
