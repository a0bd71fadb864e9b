"""The copy-ceiling bar (grader/bars.toml `kind = "copy-ceiling"`), on the CPU: the one function that computes
the fraction, a bar of that kind on any exercise through an instructor's override, graded from the same run's
rounds (the learner's time and a copy timed beside it) and never from the cached ceilings, its report, its
record, and what `ladder calibrate` and the class report make of it."""

import pytest
import torch

from conftest import torch_kernel
from grader.chapters import ch01
from grader.errors import CheckFailed, LadderError
from grader.harness import ceilings, exercise
from grader.harness.bars import bar_for
from grader.harness.calibration import Figures, Rung, propose, report
from grader.harness.ceilings import COPY_NAME, ceiling_fraction
from grader.harness.exercise import check_speed
from grader.harness.kernel_time import KernelRow, KernelTime
from grader.harness.timing import CPUBackend, Timing, clear_of


def test_the_fraction_is_the_kernels_rate_over_the_copy_rate_of_the_same_run():
    # 1 GB in 0.5 ms is 2,000 GB/s; a copy of 0.5 GB read and 0.5 GB written in 0.4 ms is 2,500 GB/s
    assert ceiling_fraction(10**9, 0.5, 10**9, 0.4) == pytest.approx(0.8)
    assert ceiling_fraction(10**9, 0.25, 10**9, 0.4) == pytest.approx(1.6)   # beyond the ceiling: the caller bounds it
    with pytest.raises(ValueError):
        ceiling_fraction(10**9, 0.0, 10**9, 0.4)


def _bars(tmp_path, monkeypatch, text: str):
    path = tmp_path / "bars.toml"
    path.write_text(text)
    monkeypatch.setenv("LADDER_BARS", str(path))


def test_any_exercise_can_take_a_copy_ceiling_bar_and_a_wrong_one_is_refused(tmp_path, monkeypatch):
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "copy-ceiling"\nbar = 0.8\n')
    bar = bar_for("1a", None)
    assert bar.is_fraction and bar.describe() == "0.80 of this GPU's copy ceiling"
    assert bar_for("1b", None).describe() == "1.50x torch eager: a * x, + b, relu (three kernels)"
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "of-peak"\nbar = 0.8\n')
    with pytest.raises(LadderError, match="'of-peak' is not a kind of bar.*'copy-ceiling'"):
        bar_for("1a", None)
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "copy-ceiling"\nbar = 1.3\n')
    with pytest.raises(LadderError, match="beyond what memory delivers"):
        bar_for("1a", None)


@pytest.fixture
def no_cached_ceilings(monkeypatch):
    """A copy-ceiling verdict must not read the cached ceilings, a file the learner's code could rewrite."""
    def refuse(*args, **kwargs):
        raise AssertionError("a copy-ceiling bar read the cached ceilings")

    monkeypatch.setattr(exercise, "ceilings", refuse)


def test_the_verdict_is_the_fraction_of_the_copy_timed_in_the_same_rounds(tmp_path, monkeypatch, capsys,
                                                                          no_cached_ceilings):
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "copy-ceiling"\nbar = 0.01\nprovisional = "not calibrated yet"\n')
    result = check_speed(ch01.VECTOR_ADD, torch_kernel(lambda a, b, out: torch.add(a, b, out=out)), device="cpu",
                         backend=CPUBackend(0.01), size=1 << 12)
    out = capsys.readouterr().out
    cmp = result.comparison
    copy = cmp.others[COPY_NAME]
    assert len(copy.rounds_ms) == len(cmp.candidate.rounds_ms) == cmp.rounds   # timed in every round, beside yours
    copy_bytes = 2 * ceilings.COPY_CPU_BYTES
    assert result.fraction == pytest.approx(ceiling_fraction(12 * (1 << 12), cmp.candidate.median_ms, copy_bytes,
                                                             copy.median_ms))
    assert result.run_copy_gbps == pytest.approx(copy_bytes / (copy.median_ms * 1e-3) / 1e9)
    assert result.passed and result.value == result.fraction and result.kind == "copy-ceiling"
    assert (f"✓ 1a speed, vector add: passed: {result.fraction:.2f} of this GPU's copy ceiling (bar 0.01, a provisional "
            f"bar: not calibrated yet); {result.speedup:.2f}x torch.add") in out
    assert f"{COPY_NAME:<16}" in out and "the bar's measure" in out
    assert COPY_NAME not in result.others           # reported as the ceiling, not as another contender
    record = result.as_record()
    assert record["kind"] == "copy-ceiling" and record["fraction"] == pytest.approx(result.fraction, abs=1e-4)
    assert record["ratio"] == pytest.approx(result.speedup, abs=1e-4)   # the speedup is still reported


def test_a_slow_kernel_fails_a_copy_ceiling_bar_with_its_fraction(tmp_path, monkeypatch, no_cached_ceilings):
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "copy-ceiling"\nbar = 1.0\n')

    @torch_kernel
    def slow(a, b, out):
        for _ in range(4):
            torch.add(a, b, out=out)

    with pytest.raises(CheckFailed) as info:   # 48 KiB moved in a call against a 64 MiB copy: far under 1.0
        check_speed(ch01.VECTOR_ADD, slow, device="cpu", backend=CPUBackend(0.01), size=1 << 12)
    msg = str(info.value)
    assert info.value.reason == "below-bar"
    assert "✗ 1a speed, vector add: below the bar: " in msg and "of this GPU's copy ceiling (bar 1.00)" in msg
    assert "Needs at least 1.00 of this GPU's copy ceiling." in msg and "x torch.add." not in msg


def test_each_rounds_fraction_settles_the_verdict():
    """clear_of with the copy as the baseline and the bytes' scale: settled once every round is 2% clear."""
    rounds = {"yours": Timing("yours", [1.0, 1.0, 1.0]), COPY_NAME: Timing(COPY_NAME, [0.5, 0.5, 0.5])}
    # the exercise moves 1.6x the copy's bytes: each round 0.8 of the ceiling
    assert clear_of(0.7, [COPY_NAME], scale=1.6)(rounds)
    assert clear_of(0.9, [COPY_NAME], scale=1.6)(rounds)                 # settled below, as surely
    assert not clear_of(0.79, [COPY_NAME], scale=1.6)(rounds)            # within 2% of the bar: not yet


def test_the_kernels_alone_line_speaks_the_bars_kind():
    k = KernelTime(calls=40, rows=[KernelRow("decode", 1, 0.30)], busy_ms=0.30, host_ms=0.05)
    lines = "\n".join(k.lines(0.60, 0.90, "gather + SDPA", 0.7, False,
                              graded_at=lambda ms: (0.5 * 0.60 / ms, f"{0.5 * 0.60 / ms:.2f} of this GPU's copy ceiling"),
                              bar_text="0.70 of this GPU's copy ceiling"))
    assert "your kernels alone would clear the bar (1.00 of this GPU's copy ceiling, bar 0.70 of this GPU's copy " \
           "ceiling)" in lines


def test_calibrate_proposes_and_reports_a_copy_ceiling_bar_in_its_own_unit(tmp_path, monkeypatch):
    _bars(tmp_path, monkeypatch, '["1a"]\nkind = "copy-ceiling"\nbar = 0.6\n')
    unit = bar_for("1a", None).unit
    rung = lambda expect: Rung("ch01", f"1a {expect}", "1a", expect, "solution", "", "")  # noqa: E731
    solution = Figures(rung("pass"), (0.82, 0.84, 0.83), unit=unit)
    below = Figures(rung("fail"), (0.31, 0.33, 0.32), unit=unit)
    p = propose(bar_for("1a", None), [solution, below])
    assert p.separates and p.kept and p.proposed == 0.6   # 10% clear of both rungs: the bar is kept
    text = report(p)
    assert "1a (graded): bar 0.60 of the copy ceiling" in text and "0.820-0.840 of the copy ceiling" in text
    assert ("keeps 0.60 of the copy ceiling: 36.7% under the solution's slowest run (0.820 of the copy ceiling), "
            "81.8% above the rung below's fastest (0.330 of the copy ceiling)") in text
    from dataclasses import replace

    moved = propose(replace(bar_for("1a", None), bar=0.8), [solution, below])   # 2.5% under the solution: moved
    assert not moved.kept and moved.proposed == 0.74
    assert "proposes 0.74 of the copy ceiling, the nearest to 0.80 of the copy ceiling that leaves 10% each side" \
        in report(moved)


def test_the_class_report_plots_the_fraction_a_copy_ceiling_bar_judged():
    from grader.classgrade.report import speed_from

    record = {"key": "10a", "ratio": 1.9, "bar": 0.6, "passed": True, "kind": "copy-ceiling", "fraction": 0.82,
              "gpu": "NVIDIA H200"}
    speed = speed_from(type("Cell", (), {"speed": record})())
    assert (speed.value, speed.bar, speed.unit) == (0.82, 0.6, " of the copy ceiling")
    older = {k: v for k, v in record.items() if k not in ("kind", "fraction")}
    assert speed_from(type("Cell", (), {"speed": older})()).value == 1.9
