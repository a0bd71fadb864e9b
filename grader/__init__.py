"""Kernel Ladder's grader: load kernels, check them, time them, and say why they pass or fail.

Notebooks use:
    from grader import load_kernel, start   (and `sass`, chapter 4's look at machine code)
    from grader.chapters import ch01
"""

from .cuda import sass
from .cuda.kernels import CudaKernel, compile_only, load_kernel
from .errors import CheckFailed, KernelCompileError, KernelLaunchError, LadderError, NoGPUError, NotImplementedYet
from .harness.session import start

__all__ = [
    "CheckFailed", "CudaKernel", "KernelCompileError", "KernelLaunchError", "LadderError", "NoGPUError",
    "NotImplementedYet", "compile_only", "load_kernel", "sass", "start",
]
__version__ = "0.1.0"
