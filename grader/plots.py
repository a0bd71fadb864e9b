"""Plots every chapter shares: each of the learner's kernels beside torch, under this GPU's ceiling."""

from __future__ import annotations

from .exercise import CEILING_NAMES, SpeedResult


def plot_results(*results: SpeedResult | None, title: str = ""):
    """Bar chart of achieved GB/s or TFLOP/s: yours, torch's, anything else reported, and the ceiling.

    Results of one unit are drawn together; pass GB/s and TFLOP/s results to separate calls.
    """
    import matplotlib.pyplot as plt

    results = [r for r in results if r is not None]
    if not results:
        print("Nothing to plot yet: run the speed cells first.")
        return None
    units = {r.unit for r in results}
    if len(units) > 1:
        raise ValueError(f"results mix units {sorted(units)}: plot them separately")
    unit = units.pop()
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(results) * 3), 3.8))
    labels, values, colors = [], [], []
    for r in results:
        labels += [f"{r.key}\nyours", f"{r.key}\n{r.baseline_name}"]
        values += [r.rate(), r.rate(r.baseline_ms)]
        colors += ["tab:orange", "tab:blue"]
        for name, ms in r.others.items():
            labels.append(f"{r.key}\n{name}")
            values.append(r.rate(ms))
            colors.append("tab:gray")
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels, fontsize=8)
    top = max(values)
    drawn = set()
    for r in results:
        if r.ceiling_value and r.ceiling_name not in drawn:
            drawn.add(r.ceiling_name)
            ax.axhline(r.ceiling_value, color="black", linestyle="--", linewidth=1)
            ax.text(-0.5, r.ceiling_value * 1.01, f"{CEILING_NAMES.get(r.ceiling_name, r.ceiling_name)} "
                    f"{r.ceiling_value:,.{1 if r.flops else 0}f} {unit}", ha="left", va="bottom", fontsize=8)
            top = max(top, r.ceiling_value)
    ax.set_ylim(0, top * 1.15)
    what = "work that must be done" if unit == "TFLOP/s" else "bytes that must move"
    ax.set_ylabel(f"achieved {unit}\n{what} / time")
    ax.set_title(title or f"on {results[0].gpu}")
    fig.tight_layout()
    return fig
