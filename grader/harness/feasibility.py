"""Whether a speed bar can be graded on a GPU, found by compiling for it; and how a speed cell is
scored where it cannot.

A bar is calibrated on particular GPUs (grader/bars.toml names them). It is out of reach of every
correct kernel on an architecture when it `needs` something that architecture lacks and bars.toml
gives no bar of its own for that architecture. The needs are checked by compiling a probe for the
architecture (grader.cuda.capabilities), never read off its name: with Triton 3.3 and later, sm_75
compiles `tl.dot` to plain FMA, so chapters 5 and 6, timed against torch's tensor-core kernels,
cannot reach their bars on a T4.

A bar is also out of reach on an architecture whose by_arch entry says `not_gradable`: `ladder calibrate`
writes that where no bar separated the solution from the rung below on that GPU.

Such a speed cell never shows a plain fail: it measures and reports as usual, then says "not
gradable on this GPU" with the reason, and is scored by the instructor's policy
(`LADDER_UNGRADABLE`, grader.config): "zero" raises NotGradable (reason code `not-gradable`), "full"
lets the cell pass. docs/gpus.md has the policy and the table for every architecture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import config
from ..cuda import archs
from ..cuda.capabilities import CAPABILITIES, Finding, find
from ..cuda.gpu import arch_here
from ..errors import NotGradable
from .bars import Bar, bar_for, load_bars
from .quiet import captured_stderr


@dataclass(frozen=True)
class Gradability:
    """A bar on one architecture: what it needs that the architecture lacks, found by compiling."""
    bar: Bar
    arch: archs.Arch
    missing: tuple[Finding, ...] = ()
    # Why the bar cannot be graded here, found when the check ran (chapter 9: the baseline library call is
    # refused on this GPU), in a sentence; empty when nothing was found.
    cause: str = ""

    @property
    def unseparated(self) -> str:
        """Why a calibration on this architecture set no bar (the bar's `not_gradable`), or empty."""
        return self.bar.not_gradable if self.bar.arch == self.arch.name else ""

    @property
    def runs(self) -> bool:
        """False when a technique the exercise needs cannot even be compiled for the architecture."""
        return not any(CAPABILITIES[f.capability].without == "cannot run" for f in self.missing)

    @property
    def reachable(self) -> bool:
        return not self.missing and not self.unseparated and not self.cause

    @property
    def status(self) -> str:
        if not self.runs:
            return "does not run"
        if not self.reachable:
            return "not gradable" if self.bar.graded else "out of reach"
        return "graded" if self.bar.graded else "reported"

    def reason(self) -> str:
        """Why the bar is out of reach here, in a sentence or two (empty when it is not)."""
        if self.reachable:
            return ""
        if self.cause:
            return f"{self.cause} Correctness is graded as on every GPU."
        if self.unseparated:
            return (f"the calibration on {self.arch.name} found no bar that the solution clears and the rung below "
                    f"misses: {self.unseparated} Correctness is graded as on every GPU.")
        parts = [f"{CAPABILITIES[f.capability].meaning}: not on {self.arch.name}. {f.evidence}; "
                 f"{CAPABILITIES[f.capability].consequence}." for f in self.missing]
        if not self.runs:
            return " ".join(parts)
        return (f"the bar ({self.bar.describe()}) assumes {' '.join(parts)} "
                "Correctness is graded as on every GPU.")


def gradability(key: str, arch: archs.Arch) -> Gradability:
    """The bar `key` on `arch`: a bar bars.toml gives for that architecture is graded there (it was set
    for it); otherwise every capability it needs is checked by compiling for `arch`."""
    bar = bar_for(key, arch.name)
    if bar.arch is not None:
        return Gradability(bar, arch)
    return Gradability(bar, arch, tuple(f for need in bar.needs if not (f := find(need, arch)).present))


def not_gradable_here(key: str) -> Gradability | None:
    """For a speed cell on this GPU: the reason its bar is out of reach here, or None (it is not, or
    there is no GPU to say)."""
    arch = arch_here()
    if arch is None:
        return None
    with captured_stderr():  # the probe's compilers must not write on a graded cell's stderr
        try:
            verdict = gradability(key, arch)
        except Exception:  # noqa: BLE001 - a probe that cannot compile here proves nothing: grade as usual
            return None
    return None if verdict.reachable else verdict


def settle(result, verdict: Gradability, verbose: bool = True):
    """Report a speed result whose bar is out of reach on this GPU, and score it by the policy: raise
    NotGradable under "zero", print and return the result under "full" (and for a bar never graded)."""
    lines = result.report().splitlines()
    lines[0] = f"⊘ {result.key} speed, {result.title}: not gradable on this GPU ({_gpu(verdict)})"
    _by_policy(verdict, lines, verbose)
    return result


def settle_unmeasured(verdict: Gradability, title: str) -> None:
    """A speed cell whose kernel cannot even be compiled for this GPU (a capability it needs `cannot run`
    here): nothing is measured. Says so, with the reason, and scores it by the policy as `settle` does:
    NotGradable under "zero", a printed note (the cell passes) under "full" and for a bar never graded."""
    _by_policy(verdict, [f"⊘ {verdict.bar.key} speed, {title}: not gradable on this GPU ({_gpu(verdict)}); "
                         "nothing was timed"])


def _gpu(verdict: Gradability) -> str:
    from ..cuda.gpu import gpu_info

    info = gpu_info()
    return f"{info.name}, {verdict.arch.name}" if info else verdict.arch.name


def _by_policy(verdict: Gradability, lines: list[str], verbose: bool = True) -> None:
    """The reason, then the instructor's policy: raises NotGradable under "zero" for a graded bar."""
    lines.append(f"Why: {verdict.reason()}")
    policy = config.ungradable_policy()
    if not verdict.bar.graded:
        lines.append("(A stretch goal: reported, never graded.)")
    elif policy == "zero":
        lines.append("The instructor's policy for speed cells that cannot be graded on the GPU they run on is "
                     "LADDER_UNGRADABLE=zero: this cell scores 0. Run it on a GPU listed in docs/gpus.md to have "
                     "your speed graded.")
        raise NotGradable("\n".join(lines))
    else:
        lines.append("The instructor's policy for speed cells that cannot be graded on the GPU they run on is "
                     "LADDER_UNGRADABLE=full: this cell gets its points.")
    if verbose:
        print("\n".join(lines))


# ------------------------------------------------------------------------------ the whole table

@dataclass(frozen=True)
class Row:
    chapter: int
    verdict: Gradability

    @property
    def key(self) -> str:
        return self.verdict.bar.key


def table(arch: archs.Arch) -> list[Row]:
    """Every bar of bars.toml (in its order: chapter by chapter) on `arch`."""
    rows = []
    for key in load_bars(arch.name):
        chapter = re.match(r"\d+", key)
        rows.append(Row(int(chapter.group()) if chapter else 0, gradability(key, arch)))
    return rows
