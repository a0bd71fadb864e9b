"""Kernel Ladder's grader: load kernels, check them, time them, and say why they pass or fail.

Notebooks use:
    from grader import load_kernel, start
    from grader.chapters import ch01
"""

from .errors import CheckFailed, KernelCompileError, KernelLaunchError, LadderError, NoGPUError, NotImplementedYet
from .kernels import CudaKernel, compile_only, load_kernel
from .notebook import start

__all__ = [
    "CheckFailed", "CudaKernel", "KernelCompileError", "KernelLaunchError", "LadderError", "NoGPUError",
    "NotImplementedYet", "compile_only", "load_kernel", "start",
]
__version__ = "0.1.0"
