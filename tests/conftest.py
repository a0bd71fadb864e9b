import os
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
