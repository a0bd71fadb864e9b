"""Ungraded timings (stretch goals, worked versions, sweeps) are left out of the grader's own runs of a
notebook on a GPU, with a note; everywhere else they run as before (grader.harness.exercise)."""

from __future__ import annotations

import pytest

from grader import config
from grader.harness import exercise


@pytest.mark.parametrize("grader_run, gpu, skipped", [(True, True, True), (True, False, False),
                                                      (False, True, False), (False, False, False)])
def test_only_the_graders_runs_on_a_gpu_skip_them(monkeypatch, capsys, grader_run, gpu, skipped):
    monkeypatch.setattr(config, "grader_run", lambda: grader_run)
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (gpu, "" if gpu else "no GPU found"))
    assert exercise.ungraded_timing_skipped("5a split-K, stretch goal") is skipped
    printed = capsys.readouterr().out
    assert ("5a split-K, stretch goal: not timed while the grader runs this notebook" in printed) is skipped


def test_a_worked_version_is_not_timed_in_the_graders_run(monkeypatch, capsys):
    monkeypatch.setattr(config, "grader_run", lambda: True)
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (True, ""))

    def measured(*args, **kwargs):
        raise AssertionError("timed although the grader runs the notebook")

    monkeypatch.setattr(exercise, "measure_speed", measured)
    assert exercise.measure_version(None, lambda *a: None, "unfused") is None
    assert "unfused: not timed while the grader runs this notebook" in capsys.readouterr().out


def test_what_a_speed_cell_reports_beside_the_baseline_is_left_out_of_the_graders_run(monkeypatch):
    from dataclasses import replace

    from grader.chapters import ch05

    def compiled():
        raise AssertionError("torch.compile ran although the grader runs the notebook")

    ex = replace(ch05.FUSED, others={"torch.compile": compiled})
    monkeypatch.setattr(config, "grader_run", lambda: True)
    others, unavailable = exercise.reported_beside(ex, (), "cuda")
    assert others == {} and "not timed while the grader runs this notebook" in unavailable["torch.compile"]
    monkeypatch.setattr(config, "grader_run", lambda: False)
    ex = replace(ch05.FUSED, others={"double": lambda: (lambda x: 2 * x)})
    others, unavailable = exercise.reported_beside(ex, (3,), "cuda")
    assert others["double"]() == 6 and unavailable == {}
