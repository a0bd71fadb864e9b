"""Harness features the later chapters use, tested on the CPU with small synthetic exercises:
FLOP-counted reports, per-size tolerances, fastest-of-several baselines, and the CPU mode that
Triton chapters run in when there is no GPU."""

import dataclasses

import pytest
import torch

from conftest import torch_kernel
from grader.harness import plots
from grader.errors import CheckFailed, NoGPUError
from grader.harness.exercise import Exercise, check_correctness, check_speed, measure_speed
from grader.harness.timing import Comparison, CPUBackend, Timing


def _mm_inputs(size, gen, dev):
    m, n, k = size
    return (torch.randn(m, k, generator=gen, device=dev), torch.randn(k, n, generator=gen, device=dev))


MATMUL = Exercise(
    key="1a", title="toy matmul", where="a test", signature="mm(a, b, out)", arg_names=("a", "b"),
    make_inputs=_mm_inputs,
    make_output=lambda size, dev: torch.empty(size[0], size[1], device=dev),
    reference=lambda a, b: a @ b,
    baseline=lambda a, b, out: torch.mm(a, b, out=out),
    baseline_name="torch.mm",
    dtype=torch.float32,
    bytes_moved=lambda s: 4 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]),
    visible_sizes=((8, 8, 8),),
    speed_size=lambda: (64, 64, 64),
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    ceiling="fp32_tflops",
    tolerance=lambda s: (1e-5, 1e-5 * s[2]),
)


def test_flop_counted_result_reports_tflops():
    # measure_speed, not check_speed: torch.mm timed against itself on a busy CPU can land on either side
    # of the bar, and the unit is what this test is about.
    """Up to 20 s on a busy 2-core machine: the CPU timing loop runs until its rounds agree."""
    result = measure_speed(MATMUL, torch_kernel(lambda a, b, out: torch.mm(a, b, out=out)), device="cpu",
                           backend=CPUBackend(0.005), size=(256, 192, 128))
    assert result.unit == "TFLOP/s" and result.flops == 2 * 256 * 192 * 128
    assert result.rate() == pytest.approx(result.flops / (result.ms * 1e-3) / 1e12)
    assert "TFLOP/s" in result.report() and "GB/s" not in result.report()


def test_tolerance_is_chosen_per_size():
    assert MATMUL.tolerance_for((4, 4, 1000)) == (1e-5, 1e-2)
    plain = dataclasses.replace(MATMUL, tolerance=None)
    assert plain.tolerance_for((4, 4, 1000)) == (1e-5, 1e-5)
    # An error far above the per-size tolerance is still caught.
    with pytest.raises(CheckFailed, match="wrong"):
        check_correctness(MATMUL, torch_kernel(lambda a, b, out: out.copy_((a @ b) + 1.0)), sizes=[(8, 8, 8)], device="cpu",
                          verbose=False)


def test_bar_is_measured_against_the_fastest_baseline():
    cmp = Comparison(candidate=Timing("yours", [2.0] * 5), baseline=Timing("slow", [8.0] * 5),
                     others={"fast": Timing("fast", [4.0] * 5), "compile": Timing("compile", [1.0] * 5)},
                     rounds=5, elapsed_s=0.1, backend="scripted")
    best = cmp.against_fastest_of(["slow", "fast"])
    assert best.baseline.name == "fast" and best.speedup == pytest.approx(2.0)
    assert set(best.others) == {"slow", "compile"}, "the other baseline stays in the report"
    with pytest.raises(KeyError):
        cmp.against_fastest_of(["missing"])


def test_speed_check_with_alternative_baselines_names_the_one_used():
    def slow_mm(a, b, out):
        for _ in range(30):
            torch.mm(a, b, out=out)

    ex = dataclasses.replace(MATMUL, baseline=slow_mm, baseline_name="slow torch",
                             baseline_alternatives={"torch.mm": lambda a, b, out: torch.mm(a, b, out=out)})
    result = measure_speed(ex, torch_kernel(lambda a, b, out: torch.mm(a, b, out=out)), device="cpu",
                           backend=CPUBackend(0.005), size=(64, 64, 64))
    assert result.baseline_name == "torch.mm" and "slow torch" in result.others
    # The chosen baseline is the faster of the two in this run; an absolute ratio would be at the
    # mercy of a busy CPU (the slow one does 30 times the work, so the order is never in doubt).
    cmp = result.comparison
    assert cmp.baseline.median_ms < result.others["slow torch"], "measured against the fast baseline"
    assert result.speedup == pytest.approx(cmp.baseline.median_ms / cmp.candidate.median_ms)


def test_cpu_mode_checks_correctness_on_cpu_and_refuses_speed(monkeypatch):
    import grader.harness.exercise as exercise

    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (False, "no GPU found (test)"))
    ex = dataclasses.replace(MATMUL, cpu_sizes=((3, 5, 7), (16, 1, 9)))
    seen = []

    @torch_kernel
    def mm(a, b, out):
        seen.append((a.device.type, tuple(a.shape)))
        torch.mm(a, b, out=out)

    result = check_correctness(ex, mm, trials=1, verbose=False)
    assert result.sizes == [(3, 5, 7), (16, 1, 9)] and seen == [("cpu", (3, 7)), ("cpu", (16, 9))]
    with pytest.raises(NoGPUError, match="no GPU: speed not measured for exercise 1a"):
        check_speed(ex, mm)


def test_cuda_exercises_without_cpu_mode_still_say_no_gpu(monkeypatch):
    import grader.harness.exercise as exercise

    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (False, "no GPU found (test)"))
    with pytest.raises(NoGPUError, match="no GPU found"):
        check_correctness(MATMUL, torch_kernel(lambda a, b, out: torch.mm(a, b, out=out)), verbose=False)


def test_results_plot_draws_rates_and_refuses_mixed_units():
    """Up to 30 s on a busy 2-core machine: the CPU timing loop behind the plotted result runs until its rounds
    agree."""
    import matplotlib
    matplotlib.use("Agg")
    # measure_speed: the plot is the subject, and torch.mm against itself can land either side of a bar.
    flop = measure_speed(MATMUL, torch_kernel(lambda a, b, out: torch.mm(a, b, out=out)), device="cpu",
                         backend=CPUBackend(0.005), size=(256, 256, 256))
    fig = plots.plot_results(flop, None, title="toy")
    assert fig is not None and "TFLOP/s" in fig.axes[0].get_ylabel()
    gb = dataclasses.replace(flop, flops=None)
    with pytest.raises(ValueError, match="mix units"):
        plots.plot_results(flop, gb)
    assert plots.plot_results(None) is None
