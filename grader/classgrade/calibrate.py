"""`ladder calibrate`: time every recorded rung (grader/rungs.toml) on this machine's GPUs, say per bar whether
the current bar separates the rungs, propose bars, and write them as a bars override file. Both kinds of bar
(grader.harness.bars.KINDS) are calibrated the same way: a speedup bar from each run's speedup, a copy-ceiling bar
from each run's fraction of the copy ceiling measured in that run.

On one GPU the rungs are timed in turn in this process's isolated verifiers (grader.notebooks.calibrate). With
`--gpus N` each rung is one task of the class-grading cluster (grader.classgrade.cluster: dask-cuda, one worker
pinned to each GPU, one task at a time), so that N rungs are timed at once, each on a GPU of its own, as N
students are graded. Either way every rung is timed by the same check, its ratios to torch measured in that
check on that GPU (or its fractions of that GPU's copy ceiling); a bar holds only where every rung is judged as it expects on whichever GPU timed it, as a
class's students are graded on whichever GPU is free.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..cuda.gpu import arch_here, gpu_info, versions
from ..errors import LadderError
from ..harness.bars import bar_for
from ..harness.calibration import Figures, Proposal, Rung, override_toml, propose, report
from ..notebooks.calibrate import rungs_named, time_rung
from ..notebooks.course import repo_root
from .cluster import RESOURCE, Where, client_for, only_own_gpu


@dataclass
class Timed:
    """One rung's outcome: its figures, or why it could not be timed, and the seconds it took."""
    rung: Rung
    figures: Figures | None
    untimed: str | None
    seconds: float


def time_one(root: Path, rung: Rung, runs: int) -> Timed:
    """One rung on this process's GPU (a Dask worker's own, with --gpus, as a graded student's)."""
    began = time.perf_counter()
    with only_own_gpu():
        try:
            return Timed(rung, time_rung(root, rung, runs), None, time.perf_counter() - began)
        except LadderError as exc:   # a rung this GPU cannot run (memory, architecture) leaves its bar to the rest
            return Timed(rung, None, str(exc), time.perf_counter() - began)


def rung_line(t: Timed, runs: int) -> str:
    """The line printed as a rung finishes, so that a run cut short keeps what it measured."""
    f, r = t.figures, t.rung
    if f is None:
        return f"{r.bar} {r.expect} {r.label}: not timed ({t.untimed})"
    return (f"{r.bar} {r.expect} {r.label}: {f.spread()}"
            + (f"; by the events where it ran {min(f.event_values):.3f}-{max(f.event_values):.3f}{f.unit}"
               if f.event_values else "")
            + (f"; untraced/traced {min(f.traced_ratios):.3f}-{max(f.traced_ratios):.3f}" if f.traced_ratios else "")
            + (f"; {min(f.rounds)}-{max(f.rounds)} timing rounds, {min(f.timing_s):.1f}-{max(f.timing_s):.1f} s a run "
               f"of {t.seconds / runs:.1f} s" if f.rounds else ""))


def _timed(root: Path, wanted: list[Rung], runs: int, gpus: int) -> list[Timed]:
    """Every rung timed, returned in the table's order, each line printed as its rung ends."""
    from tqdm import tqdm

    found: list[Timed] = []
    with tqdm(total=len(wanted), desc="ladder calibrate", unit="rung", file=sys.stderr) as bar:
        if gpus == 1:
            for rung in wanted:
                bar.set_postfix_str(rung.label[:50])
                found.append(time_one(root, rung, runs))
                tqdm.write(rung_line(found[-1], runs), file=sys.stdout)
                bar.update(1)
        else:
            with client_for(Where(gpus=gpus)) as client:   # says what to install where Dask is missing
                from distributed import as_completed

                # one task a rung, so that the longest task is one rung (bar 4 had timed three of its five rungs
                # in 9 minutes on an H200);
                # pure=False: two calibrations of the same rung are two measurements
                by_key = {f"calibrate-{i}-{rung.bar}": rung for i, rung in enumerate(wanted)}
                futures = [client.submit(time_one, root, rung, runs, resources=RESOURCE, pure=False, key=key)
                           for key, rung in by_key.items()]
                for future in as_completed(futures):
                    try:
                        timed = future.result()
                    except Exception as exc:   # noqa: BLE001
                        # a worker lost past its retries: that rung alone is untimed
                        rung = by_key[future.key]
                        timed = Timed(rung, None, f"rung {rung.label!r}: its GPU's worker was lost "
                                                  f"({type(exc).__name__}: {exc})", 0.0)
                    found.append(timed)
                    tqdm.write(rung_line(timed, runs), file=sys.stdout)
                    bar.update(1)
    order = {rung: i for i, rung in enumerate(wanted)}   # the table's order, whichever GPU finished first
    return sorted(found, key=lambda t: order[t.rung])


def _can_write(out: Path) -> None:
    """Refuse an --out that could not be written once the rungs are timed; make its folder where missing."""
    if out.is_dir():
        raise LadderError(f"--out {out} is a folder: give the path of the bars override file to write, "
                          f"such as {out / 'bars-override.toml'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LadderError(f"--out {out}: its folder cannot be made ({exc.strerror}): give a path you can write") \
            from None
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise LadderError(f"--out {out}: not writable here: give a path you can write")


def run(chapters: str | None, runs: int, out: Path, bars: str | None = None, gpus: int = 1) -> int:
    if runs < 1:
        raise LadderError("--runs takes a number of at least 1")
    if gpus < 1:
        raise LadderError("--gpus takes a number of GPUs of at least 1")
    wanted = rungs_named(chapters, bars)   # a wrong --chapters or --bars is said before anything else
    _can_write(out)                        # and a bad --out before an hour of timing, not after it
    info = gpu_info()
    if info is None:
        raise LadderError("calibrating times kernels on a GPU, and this machine has none: run `ladder calibrate` "
                          "on a machine with the GPU your class will be graded on")
    arch = arch_here().name
    start = time.perf_counter()
    timed = _timed(repo_root(), wanted, runs, gpus)
    wall = time.perf_counter() - start
    figures: dict[str, list[Figures]] = {r.bar: [] for r in wanted}
    per_chapter: dict[str, float] = defaultdict(float)
    for t in timed:
        if t.figures is not None:
            figures[t.rung.bar].append(t.figures)
        per_chapter[t.rung.chapter] += t.seconds
    untimed = [t.untimed for t in timed if t.untimed]
    proposals: list[Proposal] = [propose(bar_for(key), found) for key, found in figures.items()]
    gpu = f"{info.name} ({arch})"
    where = f"{gpus} GPUs side by side, " if gpus > 1 else ""
    print(f"{gpu}: {runs} runs a rung, {where}{wall:.0f} s in all "
          f"({', '.join(f'{c} {s:.0f} s' for c, s in per_chapter.items())}{' of GPU time' if gpus > 1 else ''})\n")
    for p in proposals:
        print(report(p) + "\n")
    out.write_text(override_toml(proposals, arch, gpu, runs))
    record = out.with_suffix(".json")
    record.write_text(json.dumps({
        "gpu": info.name, "arch": arch, "versions": versions(), "runs": runs, "gpus": gpus,
        "date": time.strftime("%Y-%m-%d"),
        "seconds": {"all": round(wall, 1), **{c: round(s, 1) for c, s in per_chapter.items()}},
        "bars": [{"key": p.key, "bar": p.current.bar, "graded": p.current.graded, "separates": p.separates,
                  "proposed": p.proposed, "kept": p.kept, "verdict": p.verdict(), "why_none": p.why_none,
                  "kind": p.current.kind,
                  "rungs": [{"label": f.rung.label, "expect": f.rung.expect, "values": list(f.values),
                             "event_values": list(f.event_values), "traced_ratios": list(f.traced_ratios),
                             "rounds": list(f.rounds), "timing_s": list(f.timing_s)}
                            for f in p.figures]} for p in proposals]}, indent=1))
    for reason in untimed:
        print(f"not timed: {reason}")
    for line in summary(proposals):
        print(line)
    print(f"Proposed bars: {out} (use it with `ladder grade --bars {out}`); every run's figures: {record}")
    return 0 if all(p.kept for p in proposals) and not untimed else 1


def summary(proposals: list[Proposal]) -> list[str]:
    """Which bars are graded and which reported, and what the calibration does with each."""
    def outcome(p: Proposal) -> str:
        if p.proposed is None:
            return f"{p.key} not gradable here"
        unit = p.current.unit
        if p.kept:
            return f"{p.key} {p.proposed:.2f}{unit} kept" + (" (thin margin)" if p.thin() else "")
        return f"{p.key} {p.current.bar:.2f}{unit} -> {p.proposed:.2f}{unit}"

    lines = []
    for kind, what in (("graded", "Graded bars (a speed cell's points)"),
                       ("reported", "Reported bars (stretch goals: shown to the learner, never graded)")):
        these = [p for p in proposals if p.kind == kind]
        if these:
            lines.append(f"{what}: {'; '.join(outcome(p) for p in these)}")
    kept = sum(p.kept for p in proposals)
    lines.append(f"The course's bars hold on this GPU for {kept} of {len(proposals)} bars"
                 + ("." if kept == len(proposals) else "; the others are proposed above, each with its margins."))
    return lines
