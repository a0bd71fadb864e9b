"""The GPU's ceilings cache (grader.harness.ceilings) without a GPU: a fake GPUInfo stands in, and
measuring is replaced, so what is tested is which cache file a GPU reads, when a cache is used, and that
a damaged or stale one is measured again rather than trusted."""

import json
from dataclasses import asdict

import pytest

from grader.cuda.gpu import GPUInfo
from grader.harness import ceilings

H100 = GPUInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 50 << 20, 80 << 30, "GPU-1234/abcd")
OTHER_H100 = GPUInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 50 << 20, 80 << 30, "GPU-5678")
MEASURED = ceilings.Ceilings(gpu=H100.name, copy_gbps=3000.0, fp32_tflops=50.0, fp16_tflops=700.0,
                             measured="2026-11-27T06:00:00+0000", torch="2.13.0")


@pytest.fixture
def gpu(monkeypatch):
    """This machine has the fake H100; measuring it records a call and gives MEASURED."""
    calls = []
    monkeypatch.setattr(ceilings, "gpu_info", lambda: H100)

    def measure():
        calls.append(1)
        return MEASURED

    monkeypatch.setattr(ceilings, "measure_ceilings", measure)
    return calls


def test_without_a_gpu_there_are_no_ceilings_and_nothing_is_measured(monkeypatch):
    monkeypatch.setattr(ceilings, "gpu_info", lambda: None)
    monkeypatch.setattr(ceilings, "measure_ceilings", lambda: pytest.fail("measured without a GPU"))
    assert ceilings.ceilings() is None and ceilings.cached_ceilings() is None


def test_each_gpu_has_its_own_cache_file_with_a_safe_name():
    mine, other = ceilings._cache_file(H100), ceilings._cache_file(OTHER_H100)
    assert mine != other and mine.parent == other.parent
    assert "/" not in mine.name.removeprefix("ceilings-") and " " not in mine.name and mine.suffix == ".json"


def test_a_cache_is_read_back_as_written_and_used_instead_of_measuring(gpu):
    path = ceilings._cache_file(H100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(MEASURED)))
    assert ceilings.ceilings() == MEASURED and gpu == []
    assert ceilings.ceilings(remeasure=True) == MEASURED and gpu == [1]
    assert MEASURED.value("fp16_tflops") == 700.0


@pytest.mark.parametrize("text", ["", "{not json", json.dumps({"gpu": "x"}),
                                  json.dumps({**asdict(MEASURED), "extra_field": 1})])
def test_a_damaged_or_stale_cache_is_measured_again(gpu, text):
    path = ceilings._cache_file(H100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert ceilings.cached_ceilings() is None
    assert ceilings.ceilings() == MEASURED and gpu == [1]


def test_no_cache_yet_is_measured(gpu):
    assert ceilings.ceilings() == MEASURED and gpu == [1]
