"""The one results plot every chapter draws: each of the learner's kernels beside torch, under this
GPU's ceiling, with the rate the learner's kernels alone reach (their GPU time in the traced batch)
marked on each of the learner's bars."""

from __future__ import annotations

from .results import CEILING_NAMES


def plot_results(*results, title: str = ""):
    """Bar chart of achieved GB/s or TFLOP/s.

    `plot_results(r1, r2, ...)` labels each result by its exercise key; `plot_results({"naive": r1,
    "padded": r2})` by the given labels. Results that are None (a cell not run yet) are left out.
    Results timed at the same size against the same baseline form a group: the learner's bars (each
    with its speedup and its share of the ceiling), then torch's (the baseline, blue; anything else
    reported, grey), so every group reads left to right from yours to torch's. Results of one unit
    are drawn together; pass GB/s and TFLOP/s results to separate calls.
    """
    import matplotlib.pyplot as plt

    if len(results) == 1 and isinstance(results[0], dict):
        entries = [(label, r) for label, r in results[0].items() if r is not None]
    else:
        entries = [(r.key, r) for r in results if r is not None]
    if not entries:
        print("Nothing to plot yet: run the speed cells first.")
        return None
    units = {r.unit for _, r in entries}
    if len(units) > 1:
        raise ValueError(f"results mix units {sorted(units)}: plot them separately")
    unit = units.pop()
    sizes = {r.size for _, r in entries}
    groups: dict[tuple, list] = {}
    for label, r in entries:
        groups.setdefault((r.size, r.baseline_name), []).append((label, r))

    labels, values, colors, notes, alone = [], [], [], [], []
    for (size, baseline), members in groups.items():
        where = f"\n{size}" if len(sizes) > 1 else ""
        for label, r in members:
            labels.append(f"{label}{where}")
            values.append(r.rate())
            colors.append("tab:orange")
            notes.append(f"{r.speedup:.3f}× {baseline}" if r.speedup < 0.1 else f"{r.speedup:.2f}× {baseline}")
            # The rate the learner's kernels alone reach (GPU time from the traced batch), beside the call's.
            alone.append((len(labels) - 1, r.rate(r.kernel_ms)) if r.kernel_ms else None)
        last = members[-1][1]
        labels.append(f"{baseline}{where}")
        values.append(last.rate(last.baseline_ms))
        colors.append("tab:blue")
        notes.append("")
        for name, ms in last.others.items():
            labels.append(f"{name}{where}")
            values.append(last.rate(ms))
            colors.append("tab:gray")
            notes.append("")

    fig, ax = plt.subplots(figsize=(max(7.0, 1.35 * len(labels)), 4.2))
    bars = ax.bar(range(len(labels)), values, color=colors)
    ax.set_xticks(range(len(labels)), labels, fontsize=7.5)
    top = max(values)
    ceiling = next((r for _, r in entries if r.ceiling_value), None)
    for bar, value, note in zip(bars, values, notes):
        if not note:
            continue
        ax.text(bar.get_x() + bar.get_width() / 2, value, note, ha="center", va="bottom", fontsize=8)
    marks = [m for m in alone if m is not None]
    if marks:
        width = bars[0].get_width()
        for i, rate in marks:
            ax.hlines(rate, i - width / 2, i + width / 2, colors="black", linestyles=":", linewidth=1.6)
        ax.plot([], [], color="black", linestyle=":", label="your kernels alone (GPU time, traced)")
        ax.legend(loc="upper right", fontsize=7.5, frameon=False)
        top = max(top, max(rate for _, rate in marks))
    if ceiling is not None:
        ax.axhline(ceiling.ceiling_value, color="black", linestyle="--", linewidth=1)
        digits = 1 if unit == "TFLOP/s" else 0
        in_run = ", measured in the run" if ceiling.run_copy_gbps else ""
        ax.text(-0.5, ceiling.ceiling_value * 1.01, f"{CEILING_NAMES.get(ceiling.ceiling_name, ceiling.ceiling_name)}"
                f"{in_run} {ceiling.ceiling_value:,.{digits}f} {unit}", ha="left", va="bottom", fontsize=8)
        top = max(top, ceiling.ceiling_value)
        for bar, value in zip(bars, values):
            if value > 0.12 * top:
                ax.text(bar.get_x() + bar.get_width() / 2, value / 2, f"{100 * value / ceiling.ceiling_value:.0f}%",
                        ha="center", va="center", fontsize=7, color="white")
    ax.set_ylim(0, top * 1.18)
    what = "work that must be done" if unit == "TFLOP/s" else "bytes that must move"
    ax.set_ylabel(f"achieved {unit}\n{what} / time")
    ax.set_title(title or f"on {entries[0][1].gpu}")
    fig.tight_layout()
    return fig

