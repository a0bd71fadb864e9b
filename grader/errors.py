"""The errors the grader raises.

Every error a learner can see from the grader is a `LadderError`. In a notebook, `grader.notebook`
shows these as one readable message instead of a traceback through the grader's internals.
"""


class LadderError(Exception):
    """Base class: an error whose message is meant for the learner."""


class CheckFailed(LadderError, AssertionError):
    """A check did not pass: wrong values, too slow, or the kernel crashed.

    It is an AssertionError so that notebook test cells and pytest treat it as a failed test.
    """


class NoGPUError(CheckFailed):
    """The check needs an NVIDIA GPU and there is none. Says what still works."""


class NotImplementedYet(LadderError, NotImplementedError):
    """The learner has not written this part yet (the released stub is still in place)."""


class KernelCompileError(CheckFailed):
    """NVRTC rejected the CUDA C source. The message quotes the learner's own lines."""


class KernelLaunchError(CheckFailed):
    """The launch was refused (bad grid/block, wrong arguments) or the kernel crashed."""
