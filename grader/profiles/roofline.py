"""A roofline of this GPU's measured ceilings with profiled kernels as points (matplotlib).

The roof is the GPU's own measured ceilings (grader.harness.ceilings: copy bandwidth and matmul
throughput), not its datasheet. A point's height is the work the exercise defines (its FLOP count
when it has one, else the fp32 FLOPs the profile counted) over the kernel's time; its x is that work
over the DRAM bytes ncu counted.
"""

from __future__ import annotations

import math


def point(sig, flops: float | None = None) -> tuple[float, float] | None:
    work = flops if flops else sig.fp32_flops
    if not work or math.isnan(work) or not sig.dram_bytes or math.isnan(sig.dram_bytes) or math.isnan(sig.time_us):
        return None
    return work / sig.dram_bytes, work / (sig.time_us * 1e-6) / 1e12


def plot_roofline(points, bandwidth_gbps: float, peaks: dict[str, float], title: str = "", highlight: str = "yours"):
    """`points`: (label, Signature, flops or None). `peaks`: {"fp32": TFLOP/s, "fp16": TFLOP/s}."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [10 ** (k / 10) for k in range(-20, 41)]
    bw = bandwidth_gbps * 1e9 / 1e12   # TB/s
    for name, peak in peaks.items():
        ax.plot(xs, [min(peak, bw * x) for x in xs], lw=1.5, label=f"{name} roof: {peak:,.0f} TFLOP/s, {bandwidth_gbps:,.0f} GB/s")
    for label, sig, flops in points:
        p = point(sig, flops)
        if p is None:
            continue
        mine = label == highlight
        ax.plot(*p, marker="*" if mine else "o", ms=14 if mine else 7, ls="", label=label,
                color="crimson" if mine else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
