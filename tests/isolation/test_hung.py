"""A learner function that hangs costs one time limit in a notebook's run, not one per check
(grader.isolation.hung): a synthetic student whose function never returns, on a CPU."""

from __future__ import annotations

import time

import pytest

from grader import config
from grader.isolation import isolate

LIMIT_S = 4
CELLS = [("solution", "def spin(x):\n    while True:\n        pass\n\n"
                      "def add_one(x):\n    return x + 1\n")]


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = tmp_path / "hung.txt"
    path.write_text("")
    monkeypatch.setenv("LADDER_FIRST_CALL_TIMEOUT_S", str(LIMIT_S))
    monkeypatch.setenv("LADDER_CALL_TIMEOUT_S", str(LIMIT_S))
    config.unpin()
    return path


def _timed_check(source: str, name: str, record=None, **kw):
    start = time.perf_counter()
    verdict = isolate.check_sources(CELLS, source, name, timeout_s=120, hung_record=record and str(record), **kw)
    return verdict, time.perf_counter() - start


def test_a_hung_function_costs_one_limit_then_fails_at_once(record):
    first, first_s = _timed_check("spin(1)\n", "first-cell", record)
    assert first.reason == "timed-out", first.message
    assert "timed out after" in first.message
    assert first_s >= LIMIT_S
    assert record.read_text().split() == ["spin"]

    again, again_s = _timed_check("assert spin(2) is None\n", "second-cell", record)
    assert again.reason == "timed-out", again.message
    assert "timed out in an earlier check" in again.message
    # no call was made: what remains is the check's own start (a fresh verifier and worker)
    assert again.seconds < first.seconds - LIMIT_S + 2, (again.seconds, first.seconds)

    other, _ = _timed_check("assert add_one(1) == 2\n", "other-cell", record)
    assert other.passed, other.message   # a cell that does not call the hung function is still graded


def test_a_time_out_beside_other_checks_is_not_remembered(record):
    # ahead of the notebook a neighbour may have slowed the call: its time-out is checked again alone
    verdict, _ = _timed_check("spin(1)\n", "ahead-cell", record, shared_gpu=True)
    assert verdict.reason == "timed-out", verdict.message
    assert record.read_text() == ""


def test_without_a_record_every_check_waits_its_own_limit(record):
    for name in ("one", "two"):
        verdict, seconds = _timed_check("spin(1)\n", name)
        assert verdict.reason == "timed-out" and seconds >= LIMIT_S
        assert "earlier check" not in verdict.message
