"""nbgrader settings for a GPU course, in one place: nbgrader_config.py, `ladder check` and `ladder
grade` all apply these (`ladder release` needs only the course's own, grader.notebooks.course)."""

from __future__ import annotations

import os

from .. import config, sockets
from .course import configure_course


# nbgrader's Execute step in this course: named, not imported (nbconvert imports a step given by name), so
# that configuring nbgrader does not pull in the executor and everything it runs on.
EXECUTE_STEP = "grader.notebooks.nbexec.LadderExecute"


def autograde_preprocessors() -> list:
    """nbgrader's autograde pipeline with its Execute step replaced by LadderExecute (grader.notebooks.nbexec)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from ..errors import LadderError

    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in steps:
        raise LadderError("this nbgrader's autograde has no Execute step to replace: grader/notebooks/nbexec.py "
                          f"was written for nbgrader 0.9.6 (its steps here: {steps})")
    return [EXECUTE_STEP if step is Execute else step for step in steps]


def feedback_preprocessors() -> list:
    """nbgrader's feedback pipeline with the hidden tests taken out after the grades are read."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.preprocessors import GetGrades

    from ..errors import LadderError
    from .hidden import HideHiddenTests

    steps = list(GenerateFeedback.class_traits()["preprocessors"].default())
    if GetGrades not in steps:
        raise LadderError("this nbgrader's feedback has no GetGrades step to follow: grader/notebooks/hidden.py was "
                          f"written for nbgrader 0.9.6 (its steps here: {steps})")
    index = steps.index(GetGrades) + 1
    return [*steps[:index], HideHiddenTests, *steps[index:]]


def configure_nbgrader(c, root: str | None = None) -> None:
    """Apply the course's settings to a traitlets Config (`c` in nbgrader_config.py)."""
    configure_course(c, root)
    # nbgrader's default is 30 s a cell. A speed cell warms up, times interleaved rounds against torch
    # and may compile (NVRTC, torch.compile, Triton autotuning): minutes, not seconds.
    c.Execute.timeout = config.cell_timeout_s()
    c.Execute.interrupt_on_timeout = True
    # A GPU check that hangs must not hold the grading of the rest of the class.
    c.Execute.startup_timeout = config.KERNEL_STARTUP_TIMEOUT_S
    c.Execute.execute_retries = 0
    # Talk to notebook kernels over local sockets: over TCP, ipykernel 7 prints a warning about
    # unencrypted traffic at every start, which `ladder check` would pass on to the learner. The
    # sockets' path is absolute (the kernel runs in the notebook's folder, this process maybe not) and
    # this process's own (two graders at once must not meet).
    if os.name == "posix":
        c.KernelManager.transport = "ipc"
        c.KernelManager.ip = sockets.kernel_socket_prefix()
    # A kernel that dies (segfault, os._exit, a CUDA fault, the OOM killer) or hangs past the
    # timeout costs only the cell it was running: nbgrader's own Execute would let the error escape,
    # and nbgrader then deletes the student's whole autograded notebook. See grader.notebooks.nbexec.
    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    # How many fresh kernels one notebook may get after its kernel dies or hangs in a cell. The next
    # loss ends that notebook's run: its remaining cells score 0 as "not run", the rest stay graded.
    c.LadderExecute.max_kernel_restarts = config.MAX_KERNEL_RESTARTS
    # Graded test cells are checked in fresh processes (grader.isolation, docs/isolation.md): on by
    # default for grading (`ladder grade`, `nbgrader autograde`); LADDER_ISOLATED=0 (`ladder grade
    # --in-kernel`) runs them in the notebook's kernel instead. `ladder check` decides for itself.
    c.LadderExecute.isolated_checks = config.isolated(default=True)
    # Kernel reports are short; a runaway print loop must not bloat a feedback page.
    c.LimitOutput.max_lines = 400
    c.LimitOutput.max_traceback = 60
    # Feedback pages go to students: nbgrader's feedback renders the autograded notebook with the hidden tests in
    # it, which this step takes out (grader.notebooks.hidden), on every path that makes feedback.
    c.GenerateFeedback.preprocessors = feedback_preprocessors()
    # A student who deletes or edits a test cell is still graded on the original tests: autograde
    # restores every grade cell's source from the gradebook (nbgrader's default), and re-adds grade
    # cells that were deleted or stripped of their metadata.
    c.OverwriteCells.add_missing_cells = True
