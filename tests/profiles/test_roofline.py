"""A roofline point (grader.profiles.roofline): where a profiled kernel sits, and which profiles cannot
be placed (no DRAM bytes, no work, NaN counters), which must be left out rather than drawn at 0 or inf."""

import math
from types import SimpleNamespace

import matplotlib
import pytest

from grader.profiles.roofline import plot_roofline, point

matplotlib.use("Agg")


def _sig(fp32_flops=2e9, dram_bytes=1e9, time_us=1000.0):
    return SimpleNamespace(fp32_flops=fp32_flops, dram_bytes=dram_bytes, time_us=time_us)


def test_a_point_is_intensity_and_tflops():
    assert point(_sig()) == (2.0, pytest.approx(2.0))               # 2e9 FLOP in 1 ms over 1e9 bytes: 2 TFLOP/s
    assert point(_sig(), flops=8e9) == (8.0, pytest.approx(8.0))    # the exercise's own FLOP count wins


@pytest.mark.parametrize("sig", [_sig(dram_bytes=0), _sig(dram_bytes=math.nan), _sig(fp32_flops=0),
                                 _sig(fp32_flops=math.nan), _sig(time_us=math.nan)])
def test_a_profile_that_cannot_be_placed_is_left_out(sig):
    assert point(sig) is None


def test_the_plot_draws_one_roof_per_peak_and_only_placeable_points():
    fig = plot_roofline([("yours", _sig(), None), ("torch", _sig(), 4e9), ("no bytes", _sig(dram_bytes=0), None)],
                        bandwidth_gbps=3000, peaks={"fp32": 50, "fp16": 700})
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert len(labels) == 4 and labels[2:] == ["yours", "torch"]
    assert fig.axes[0].get_xscale() == "log"
