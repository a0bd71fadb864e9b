"""`ladder doctor` without a GPU: says so, lists what still works, exits 0."""

import json
import subprocess
import sys

import pytest

from conftest import HAS_GPU, ROOT
from grader.cuda.toolkit import find_wmma_headers

pytestmark = pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour")


def test_doctor_without_gpu_exits_zero_and_explains():
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "doctor"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    out = proc.stdout
    assert "GPU            none: no GPU found" in out
    assert "What still works without a GPU" in out
    for name in ("torch", "triton", "cupy", "nbgrader", "CUDA headers", "NVRTC"):
        assert name in out


def test_doctor_json_without_gpu():
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "doctor", "--json"], capture_output=True, text=True, cwd=ROOT)
    report = json.loads(proc.stdout)
    assert report["gpu"] is None and "no GPU found" in report["no_gpu_reason"]
    assert report["nvrtc_compile_only"]["ok"] is True


def test_dev_install_provides_wmma_headers():
    report = find_wmma_headers()
    assert report.ok, report.describe()
