"""A fusion exercise's launch count, read from the device trace of its timed calls.

A speed bar alone cannot always tell a fused answer from the same kernels unfused: on some GPUs torch's
own kernels run far enough under the copy ceiling that two plain kernels clear the bar too (7b on an
H200, 8b on an H100: assets/results/calibration/). Each unfused piece of glue is one more launch of the
learner's kernels and one more trip of the data through memory, so the count per call is what these
exercises teach, and it is the same on every GPU.
"""

from __future__ import annotations

from ..errors import CheckFailed
from ..calls.foreign import short
from ..calls.rules import unchecked
from .kernel_time import KernelTime


def require_launches(kernels: KernelTime | None, at_most: int, label: str, fused: str, advice: str) -> None:
    """At most `at_most` launches of the learner's kernels per call, from the timed calls' trace.

    `fused` says what the fused answer launches, `advice` what to fuse. Without a trace the fusion cannot be
    graded here, and the instructor's policy for unchecked cells scores it (grader.calls.rules.unchecked)."""
    if kernels is None or kernels.note is not None:
        unchecked(f"{label} fusion", "counting your kernel launches in the device trace",
                  kernels.note if kernels is not None else "no device trace")
        return
    launches = round(kernels.launches)
    if launches <= at_most:
        print(f"✓ {label} fusion: {launches} launch{'es' if launches != 1 else ''} of your kernels per call ({fused})")
        return
    listed = ", ".join(f"{short(r.name)} ×{r.launches:.3g}" for r in kernels.rows)
    raise CheckFailed(f"{label}: your code launched {launches} of your kernels per call ({listed}); fused, it is "
                      f"{at_most}: {fused}. Each extra launch is a step that goes through memory on its own: "
                      f"{advice}", reason="not-fused")
