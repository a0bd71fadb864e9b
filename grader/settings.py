"""nbgrader settings for a GPU course, in one place: nbgrader_config.py, `ladder release`,
`ladder check` and `ladder grade` all apply these."""

from __future__ import annotations

import os

COURSE_ID = "kernel-ladder"
SOURCE_DIR = "solutions"
RELEASE_DIR = "course"

# nbgrader's default is 30 s a cell. A speed cell warms up, times interleaved rounds against torch
# and may compile (NVRTC, torch.compile, Triton autotuning in later chapters): minutes, not seconds.
# LADDER_CELL_TIMEOUT_S overrides it (an instructor with slow GPUs, or a test that expects a hang).
CELL_TIMEOUT_S = int(os.environ.get("LADDER_CELL_TIMEOUT_S", "900"))

# How many fresh kernels one notebook may get after its kernel dies or hangs in a cell. The next
# loss ends that notebook's run: its remaining cells score 0 as "not run", the rest stay graded.
MAX_KERNEL_RESTARTS = 3


def autograde_preprocessors() -> list:
    """nbgrader's autograde pipeline with its Execute step replaced by grader.nbexec.LadderExecute."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from .errors import LadderError
    from .nbexec import LadderExecute

    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in steps:
        raise LadderError("this nbgrader's autograde has no Execute step to replace: grader/nbexec.py "
                          f"was written for nbgrader 0.9.6 (its steps here: {steps})")
    return [LadderExecute if step is Execute else step for step in steps]


def configure_nbgrader(c, root: str | None = None) -> None:
    """Apply the course's settings to a traitlets Config (`c` in nbgrader_config.py)."""
    if root is not None:
        c.CourseDirectory.root = root
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = SOURCE_DIR
    c.CourseDirectory.release_directory = RELEASE_DIR
    # Never copy build products or caches into a release or a submission.
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.cubin",
                                "*.ptx", "*.o", ".triton"]
    c.Execute.timeout = CELL_TIMEOUT_S
    c.Execute.interrupt_on_timeout = True
    # A GPU check that hangs must not hold the grading of the rest of the class.
    c.Execute.startup_timeout = 120
    c.Execute.execute_retries = 0
    # A kernel that dies (segfault, os._exit, a CUDA fault, the OOM killer) or hangs past the
    # timeout costs only the cell it was running: nbgrader's own Execute would let the error escape,
    # and nbgrader then deletes the student's whole autograded notebook. See grader/nbexec.py.
    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    c.LadderExecute.max_kernel_restarts = MAX_KERNEL_RESTARTS
    # Graded test cells are checked in fresh processes (grader/isolate.py, docs/isolation.md): on by
    # default for grading (`ladder grade`, `nbgrader autograde`); LADDER_ISOLATED=0 (`ladder grade
    # --in-kernel`) runs them in the notebook's kernel instead. `ladder check` decides for itself.
    c.LadderExecute.isolated_checks = os.environ.get("LADDER_ISOLATED", "1") != "0"
    # Kernel reports are short; a runaway print loop must not bloat a feedback page.
    c.LimitOutput.max_lines = 400
    c.LimitOutput.max_traceback = 60
    # A student who deletes or edits a test cell is still graded on the original tests: autograde
    # restores every grade cell's source from the gradebook (nbgrader's default), and re-adds grade
    # cells that were deleted or stripped of their metadata.
    c.OverwriteCells.add_missing_cells = True
    # The released stub for code solutions. The grader recognises it inside CUDA C strings too.
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
