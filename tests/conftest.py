import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _has_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU: none found (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    # Ceilings measured by one test must not leak into a learner's cache, nor bars overrides between tests.
    monkeypatch.setenv("LADDER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LADDER_BARS", raising=False)


@pytest.fixture
def root() -> Path:
    return ROOT


def ladder_check(*notebooks, timeout: float = 1800) -> tuple[int, dict]:
    """`ladder check --json` on notebooks, in a fresh process: (exit code, the JSON report)."""
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json", *map(str, notebooks)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    return proc.returncode, json.loads(proc.stdout)


def cells_by_id(notebook: dict) -> dict:
    """A notebook report's graded cells, keyed by grade_id."""
    return {c["grade_id"]: c for c in notebook["cells"]}


def ladder_check_one(nb, timeout: float = 1800) -> tuple[int, dict, dict]:
    """`ladder check` on one notebook: (exit code, its report, its cells keyed by grade_id)."""
    code, report = ladder_check(nb, timeout=timeout)
    (notebook,) = report["notebooks"]
    return code, notebook, cells_by_id(notebook)
