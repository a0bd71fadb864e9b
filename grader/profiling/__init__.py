"""Profiling a learner's own kernel with Nsight Compute, and the recorded signature of every rung.

In a notebook cell:

    from grader.profiling import profile, show_recorded
    profile("2")          # your saved notebook's transpose, at the graded size, under ncu
    show_recorded("2")    # the H100's recorded rungs only

From a terminal: `ladder profile NOTEBOOK --exercise 2`. Profiling is a learner's tool: no grade
depends on it (docs/profiling.md).

Modules: ncu (running ncu, and every way it fails), target (the process ncu wraps), timeline (the launcher
called back to back under a device trace). The profiles themselves, as data, are grader.profiles's.
"""

from __future__ import annotations

import os
from pathlib import Path


def _this_notebook(exercise: str) -> Path:
    """The notebook this kernel runs: Jupyter names it in JPY_SESSION_NAME; else the one chapter notebook
    in the working folder (a notebook's kernel starts in the notebook's folder)."""
    from ..learner.cells import chapter_of
    named = os.environ.get("JPY_SESSION_NAME")
    if named and Path(named).suffix == ".ipynb" and Path(named).is_file():
        return Path(named)
    found = [p for p in sorted(Path.cwd().glob("*.ipynb")) if chapter_of(str(p), p)]
    if len(found) == 1:
        return found[0]
    from ..errors import LadderError
    raise LadderError(f"cannot tell which notebook to profile for exercise {exercise}: pass it, "
                      f"profile({exercise!r}, notebook='path/to/notebook.ipynb')")


def show_recorded(exercise: str) -> None:
    from ..profiles import recorded
    print(f"Recorded on an {recorded.gpu_of(exercise)}, every rung of exercise {exercise}:")
    for rung in recorded.rungs(exercise):
        print(f"  {rung}: {recorded.describe(exercise, rung)}")
    print(recorded.table(exercise))


def _roofline(exercise: str, mine=None, flops=None):
    from ..profiles import recorded
    from ..profiles.roofline import plot_roofline
    entry = recorded.exercise_index(exercise)["exercises"][exercise]
    ceil = recorded.exercise_index(exercise)["ceilings"]
    points = [(r, recorded.load(exercise, r), entry.get("flops")) for r in recorded.rungs(exercise)]
    if mine is not None:
        points.append(("yours", mine, flops))
    peaks = {"fp32": ceil["fp32_tflops"], "fp16 tensor": ceil["fp16_tflops"],
             **({"fp8 tensor": ceil["fp8_tflops"]} if ceil.get("fp8_tflops") else {})}
    return plot_roofline(points, ceil["copy_gbps"], peaks,
                         title=f"exercise {exercise}: the recorded rungs ({entry['gpu']}) and yours")


def profile(exercise: str, notebook: str | os.PathLike | None = None, size=None):
    """Profile the learner's launcher for `exercise` from the saved notebook; print its signature beside
    the recorded rungs and return a roofline figure. When it cannot profile here, say why and show the
    recorded rungs instead: this never fails a cell and never writes to stderr."""
    import json

    from .. import config
    from ..errors import LadderError
    from .ncu import ProfileUnavailable, profile_notebook
    if config.grader_run():
        # Grading runs every cell of every student's notebook: minutes of Nsight Compute each, for no grade.
        print(f"Not profiled while `ladder check` or `ladder grade` runs this notebook: run this cell yourself, "
              f"or `ladder profile NOTEBOOK --exercise {exercise}`.\n")
        return _recorded_or_say_so(exercise)
    try:
        nb = Path(notebook) if notebook else _this_notebook(exercise)
        print(f"Profiling exercise {exercise} from the saved {nb.name} (save it first to profile your latest code)...")
        result = profile_notebook(nb, exercise, size=json.dumps(size) if size is not None else None)
    except (ProfileUnavailable, LadderError) as exc:
        print(f"Not profiled here: {exc}\n")
        return _recorded_or_say_so(exercise)
    print(describe(result) + "\n")
    return _recorded_or_say_so(exercise, result.main, result.target.get("flops"))


def describe(result) -> str:
    """A profile as `ladder profile` and `profile()` print it: the note on a smaller size, the learner's
    main kernel's signature, and the other kernels the launcher ran."""
    lines = [f"Note: {result.target['smaller']}."] if result.target.get("smaller") else []
    lines.append(result.main.summary())
    lines += [f"  also in the launcher: {s.kernel[:60]} ({s.time_us:,.1f} us)" for s in result.signatures[1:]]
    return "\n".join(lines)


def _recorded_or_say_so(exercise: str, mine=None, flops=None):
    """The recorded rungs and the roofline; for an exercise with no recording, a line that says so."""
    from ..errors import LadderError
    try:
        show_recorded(exercise)
        return _roofline(exercise, mine, flops)
    except LadderError as exc:
        print(f"No recorded rungs to compare with: {exc}")
        return None
