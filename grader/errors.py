"""The errors the grader raises.

Every error a learner can see from the grader is a `LadderError`. In a notebook, `grader.notebook`
shows these as one readable message instead of a traceback through the grader's internals.

Each error carries a stable `reason` code (a class default, or set per raise with `reason=`), so
that tests, `ladder check --json` and the exploit suite can say *why* a check failed, not only that
it did. The codes are listed in `REASONS`.
"""

from __future__ import annotations

DEFERRED = "deferred"   # a check run ahead of its notebook that needs the GPU to itself (grader.cuda.sharing)

REASONS = {
    "failed": "a check did not pass",
    "not-written": "the exercise still holds the released stub",
    "no-gpu": "the check needs a GPU and there is none",
    "compile-error": "NVRTC or Triton rejected the kernel source",
    "launch-error": "a launch was refused (grid, block, arguments)",
    "raised": "the learner's function raised an exception",
    "crashed": "the process running the learner's code died (illegal address, abort, segfault)",
    "timed-out": "the learner's code ran past the check's time limit",
    "wrong-result": "values differ from the float64 reference (NaN/Inf where it has none included)",
    "wrong-dtype": "the output has the wrong dtype",
    "not-plain": "a returned value is not a plain tensor, array or number",
    "input-modified": "the kernel wrote into an input",
    "out-of-bounds": "the kernel wrote past either end of the output (guard band)",
    "kernel-unused": "the output was produced without the learner's kernel",
    "library-compute": "torch computed on the inputs inside the learner's launcher",
    "swallowed-error": "the learner's kernel raised and the launcher caught it",
    "stray-thread": "the launcher left a thread running",
    "stray-process": "the launcher left a process running (detached or not) when it returned",
    "tampered": "the learner's code replaced part of torch, Triton, the timer or the grader",
    "timer-mismatch": "the host clock and the GPU's events disagree about the learner's time",
    "too-fast": "faster than this GPU's measured physical limit",
    "l2-persist": "the learner's code reserved persisting L2 cache",
    "no-tensor-cores": "a tensor-core exercise ran kernels without tensor-core instructions",
    "no-fp8-tensor-cores": "an FP8 exercise (9b) did its multiply-adds on tensor cores of another type (fp16, bf16) or none",
    "not-skipped": "a causal launch computed the key tiles above the diagonal (counted tensor-core work)",
    "not-fused": "a fusion exercise (7b, the 8b block) launched more of the learner's kernels per call than its ops fused need (device trace)",
    "below-bar": "correct, but slower than the exercise's pass bar",
    "not-gradable": "the speed bar is out of reach of any correct kernel on this GPU (scored by LADDER_UNGRADABLE)",
    "unchecked": "a check the verdict rests on could not run on this machine (scored by LADDER_UNCHECKED)",
    "memory": "the launch allocated more memory than the exercise allows",
    "stderr": "a graded cell wrote to stderr",
    "not-run": "the cell never ran: an earlier cell stopped the notebook or it timed out first",
    # a whole notebook's reasons (grader.notebooks.recognise, grader.classgrade): nothing in it could be graded
    "not-a-notebook": "the file is missing, empty, not JSON, not a notebook, or a notebook of no chapter",
    "other-chapter": "the notebook is another chapter's (by its cells, whatever its name)",
    "nothing-submitted": "the student's submission folder holds no notebook",
    "not-graded": "grading itself failed for this notebook (the message says why)",
    "sanitizer-memcheck": "compute-sanitizer memcheck found an invalid memory access",
    "sanitizer-racecheck": "compute-sanitizer racecheck found a shared-memory race",
    "sanitizer-synccheck": "compute-sanitizer synccheck found an invalid barrier",
    DEFERRED: "no verdict: a check run ahead beside others on one GPU would have timed something "
              "(grader/cuda/sharing.py); it runs again alone when its cell is reached, and never counts",
}


class LadderError(Exception):
    """Base class: an error whose message is meant for the learner."""

    reason = "failed"

    def __init__(self, *args, reason: str | None = None):
        super().__init__(*args)
        if reason is not None:
            if reason not in REASONS:
                raise ValueError(f"unknown reason code {reason!r}")
            self.reason = reason


class CheckFailed(LadderError, AssertionError):
    """A check did not pass: wrong values, too slow, or the kernel crashed.

    It is an AssertionError so that notebook test cells and pytest treat it as a failed test.
    """


class NoGPUError(CheckFailed):
    """The check needs an NVIDIA GPU and there is none. Says what still works."""

    reason = "no-gpu"


class NotGradable(CheckFailed):
    """The speed bar cannot be reached by any correct kernel on this GPU (grader.harness.feasibility
    says why); raised only where the instructor's policy scores such a cell 0."""

    reason = "not-gradable"


class NotImplementedYet(LadderError, NotImplementedError):
    """The learner has not written this part yet (the released stub is still in place)."""

    reason = "not-written"


class KernelCompileError(CheckFailed):
    """NVRTC rejected the CUDA C source. The message quotes the learner's own lines."""

    reason = "compile-error"


class KernelLaunchError(CheckFailed):
    """The launch was refused (bad grid/block, wrong arguments) or the kernel crashed."""

    reason = "launch-error"


class CheckTimedOut(CheckFailed):
    """The learner's code ran past the check's time limit; the process running it was killed."""

    reason = "timed-out"


class WorkerCrashed(CheckFailed):
    """The fresh process running the learner's code died or broke its GPU context."""

    reason = "crashed"


BY_NAME = {cls.__name__: cls for cls in (LadderError, CheckFailed, NoGPUError, NotImplementedYet, KernelCompileError,
                                         KernelLaunchError, CheckTimedOut, WorkerCrashed, NotGradable)}


def as_dict(exc: BaseException) -> dict:
    """An error as plain data, to cross a process boundary."""
    if isinstance(exc, LadderError):
        name = next((n for n, c in BY_NAME.items() if type(exc) is c), "CheckFailed")
        return {"cls": name, "reason": exc.reason, "message": str(exc.args[0]) if exc.args else str(exc)}
    return {"cls": "CheckFailed", "reason": "raised", "message": f"{type(exc).__name__}: {exc}"}


def from_dict(d: dict) -> LadderError:
    cls = BY_NAME.get(d.get("cls"), CheckFailed)
    reason = d.get("reason")
    return cls(d.get("message", ""), reason=reason if reason in REASONS else None)
