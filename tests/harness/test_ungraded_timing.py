"""Ungraded work (stretch goals whole, worked versions' and sweeps' timings) is left out of the grader's own
runs of a notebook on a GPU, with a note; everywhere else it runs as before (grader.harness.exercise)."""

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


@pytest.mark.parametrize("grader_run", [True, False])
def test_a_stretch_goal_is_left_out_whole_in_the_graders_run_and_checked_elsewhere(monkeypatch, capsys, grader_run):
    from grader.chapters import ch05, ch06

    monkeypatch.setattr(config, "grader_run", lambda: grader_run)
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (True, ""))
    checked = []

    def correctness(*args, **kwargs):
        checked.append(args[0].key)
        raise NotImplementedError   # as a stretch not attempted: nothing is timed after it

    monkeypatch.setattr(exercise, "check_correctness", correctness)
    monkeypatch.setattr(ch05, "check_correctness", correctness)
    monkeypatch.setattr(ch06, "check_attention", lambda *a, **k: correctness(ch06.ATTENTION))
    assert exercise.check_stretch(ch05.MATMUL, lambda a, b, out: None, "5a-stretch", [(1, 1, 1)], "x") is None
    assert ch05.check_matmul_stretch(lambda a, b, out: None) is None
    assert ch06.check_attention_fast(lambda q, k, v, out, causal: None) is None
    printed = capsys.readouterr().out
    if grader_run:
        assert checked == [] and printed.count("not checked while the grader runs this notebook") == 3, printed
    else:
        assert checked == [ch05.MATMUL.key, ch05.SPLIT_K.key, ch06.ATTENTION.key], checked
        assert printed.count("not attempted yet") == 3, printed


@pytest.mark.parametrize("grader_run", [True, False])
def test_a_speed_check_against_an_ungraded_bar_is_left_out_of_the_graders_run(monkeypatch, capsys, grader_run):
    """The rule sits in check_speed itself, so a chapter's stretch cell that times against an ungraded bar
    (chapter 6's "6-stretch": 4.9 s of a student's grading on an H100) cannot forget it; graded bars are timed."""
    from grader.chapters import ch06

    monkeypatch.setattr(config, "grader_run", lambda: grader_run)
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (True, ""))
    monkeypatch.setattr(exercise, "_device", lambda device: "cuda")
    monkeypatch.setattr(exercise, "speed_check_ahead", lambda what: None)
    timed = []

    def measured(ex, fn, bar_key=None, *args, **kwargs):
        timed.append(bar_key)
        raise NotImplementedError   # stands for the timing: nothing after it matters here

    monkeypatch.setattr(exercise, "measure_speed", measured)
    fn = lambda q, k, v, out: None  # noqa: E731
    assert not exercise.bar_for("6-stretch").graded and exercise.bar_for("6").graded
    if grader_run:
        assert exercise.check_speed(ch06.VS_SDPA, fn, "6-stretch") is None
        assert "6-stretch" in capsys.readouterr().out
    else:
        with pytest.raises(NotImplementedError):
            exercise.check_speed(ch06.VS_SDPA, fn, "6-stretch")
    with pytest.raises(NotImplementedError):   # a graded bar is timed in every run
        exercise.check_speed(ch06.ATTENTION, fn, "6")
    assert timed == ([] if grader_run else ["6-stretch"]) + ["6"]


def test_no_graded_cell_calls_a_check_that_the_graders_run_leaves_out():
    """A stretch check returns without checking in the grader's runs: a graded cell that called one would
    score points unchecked. Which chapter functions lead to stretch_left_out is read from their source."""
    import inspect
    import json
    import re
    from pathlib import Path

    from grader import chapters
    from grader.learner.cells import grade_id, is_autograded_test

    from grader.harness.bars import load_bars

    root = Path(__file__).resolve().parents[2]
    ungraded = {key for key, bar in load_bars(arch=None).items() if not bar.graded}
    left_out = set()
    for name in chapters.names():
        module = chapters.module(name)
        for fname, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__:
                continue
            source = inspect.getsource(fn)
            timed_ungraded = any(re.search(rf"check_speed\(.*\"{re.escape(key)}\"", source) for key in ungraded)
            if timed_ungraded or re.search(r"\b(check_stretch|stretch_left_out)\(", source):
                left_out.add(fname)
    assert {"check_matmul_stretch", "check_attention_fast", "check_matmul_hopper", "check_attention_stretch"} <= left_out, left_out
    for path in sorted((root / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if is_autograded_test(cell):
                source = "".join(cell["source"])
                assert not [f for f in left_out if f"{f}(" in source], (path.name, grade_id(cell))
