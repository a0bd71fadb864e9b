"""The speed report's account of where a call's time went (grader.harness.kernel_time), from a traced
batch's facts, and the plot's kernels-alone mark."""

from __future__ import annotations

import dataclasses

import pytest

from grader.cuda.trace import DeviceOp, DeviceTrace
from grader.harness.kernel_time import KernelTime
from grader.calls.messages import BatchFacts


def traced_batch(reps=100, kernel_us=400.0, syncs=0, printed=0, launches_per_call=1, host_ms=60.0):
    ops = [DeviceOp("kernel", "fused_relu", count=reps * launches_per_call, total_us=kernel_us * reps,
                    grid=(131072, 1, 1), block=(256, 1, 1), streams=(7,)),
           DeviceOp("memset", "Memset (Device)", count=reps, total_us=1.0 * reps)]
    device = DeviceTrace(ops=ops, calls={"sync": syncs * reps, "alloc": 0, "launch": reps}, busy_us=401.0 * reps)
    return BatchFacts(own_launches={"fused_relu": reps * launches_per_call}, device=device, host_ms=host_ms,
                      printed=printed, event_ms=host_ms, launcher_ms=host_ms)


def test_per_call_figures():
    k = KernelTime.from_batch(traced_batch(syncs=1, printed=600), 100)
    assert k.kernel_ms == pytest.approx(0.4) and k.launches == 1 and k.other_ms == pytest.approx(0.001)
    assert k.busy_ms == pytest.approx(0.401) and k.host_ms == pytest.approx(0.6)
    assert k.syncs == 1 and k.printed == 6


def test_a_slow_call_with_fast_kernels_names_the_synchronize_and_the_print():
    k = KernelTime.from_batch(traced_batch(syncs=1, printed=600), 100)
    text = "\n".join(k.lines(call_ms=0.60, baseline_ms=0.80, baseline_name="torch eager", bar=1.5, passed=False))
    assert "your kernels alone would clear the bar (2.00x torch eager, bar 1.50x)" in text
    assert "synchronize in your launcher (1 per call)" in text and "printing (6 characters per call)" in text
    assert "fused_relu" in text and "grid (131072, 1, 1)" in text
    assert "timed batches run untraced" in text and "after timing" in text


def test_no_explanation_when_the_kernels_alone_are_slow_too_or_the_bar_is_met():
    k = KernelTime.from_batch(traced_batch(), 100)
    slow = "\n".join(k.lines(call_ms=0.60, baseline_ms=0.50, baseline_name="torch", bar=1.5, passed=False))
    assert "would clear" not in slow
    met = "\n".join(k.lines(call_ms=0.40, baseline_ms=0.80, baseline_name="torch", bar=1.5, passed=True))
    assert "would clear" not in met


def test_a_launch_per_element_and_plain_host_work_are_told_apart():
    many = KernelTime.from_batch(traced_batch(launches_per_call=4096, kernel_us=0.1), 100)
    assert any("launch per row or element" in c for c in many.causes())
    plain = KernelTime.from_batch(traced_batch(), 100)
    assert plain.causes()[0].startswith("host work in your launcher")


def test_without_a_trace_one_line_says_why():
    k = KernelTime.from_batch(BatchFacts(device=DeviceTrace(note="no GPU")), 10)
    lines = k.lines(1.0, 1.0, "torch", 1.0, False)
    assert lines == ["  device trace: not available here (no GPU); the grader's other checks still apply"]


def test_the_report_and_the_plot_show_kernel_time_beside_call_time():
    import matplotlib
    matplotlib.use("Agg")

    from grader.harness import plots
    from grader.harness.results import SpeedResult
    from grader.harness.timing import Comparison, Timing

    cmp = Comparison(candidate=Timing("yours", [0.60] * 5), baseline=Timing("torch eager", [0.80] * 5), others={},
                     rounds=5, elapsed_s=1.0, backend="batch")
    result = SpeedResult(key="1b", title="fused", size="2^27", gpu="a test", comparison=cmp, bar=1.5, graded=True,
                         passed=False, bytes_moved=3 * 4 * 2**27, flops=None, ceiling_name="copy_gbps",
                         ceiling_value=None, baseline_name="torch eager")
    assert result.kernel_ms is None and "kernels alone" not in result.report()
    traced = dataclasses.replace(result, kernels=KernelTime.from_batch(traced_batch(syncs=1), 100))
    assert traced.kernel_ms == pytest.approx(0.4)
    report = traced.report()
    assert "kernels alone" in report and "would clear the bar (2.00x torch eager" in report
    fig = plots.plot_results(traced)
    legend = fig.axes[0].get_legend()
    assert legend is not None and "your kernels alone" in legend.get_texts()[0].get_text()
