"""What a chapter notebook calls first: a summary of the machine, and readable grader errors.

`start()` installs an IPython handler for `LadderError`: the learner sees one message that says
what is wrong, not a traceback through the grader's internals. It is still an error output, so
nbgrader and nbval count the cell as failed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .. import config
from ..calls import facts
from ..cuda import interpreter
from ..cuda.gpu import GPUInfo, gpu_info, gpu_or_reason
from ..errors import LadderError
from .ceilings import Ceilings, cached_ceilings, ceilings
from .without_gpu import INTERPRETED_BELOW, WHAT_STILL_WORKS, interpreted_here
from .quiet import captured_stderr


def _show_ladder_error(shell, etype, value, tb, tb_offset=None):
    # The reason code ends the message on every path, as the isolated checks end theirs, so that
    # `ladder check` reads one verdict whichever process checked the cell.
    stb = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {value}", f"[reason: {value.reason}]"]
    shell._showtraceback(etype, f"{value}\n[reason: {value.reason}]", stb)
    return stb


def install_error_display() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((LadderError,), _show_ladder_error)
    return True


@dataclass(frozen=True)
class Session:
    gpu: GPUInfo | None
    ceilings: Ceilings | None

    @property
    def has_gpu(self) -> bool:
        return self.gpu is not None


def _interpret(chapter: int | None, info: GPUInfo | None) -> bool:
    """Switch Triton to its interpreter where `chapter`'s kernels run on the CPU on this machine (no GPU, or a
    GPU older than the chapter needs: grader.harness.without_gpu), with its fp8 casts made exact and its
    `tl.dot` counted (grader.cuda.interpreter). True when it did."""
    if not interpreted_here(chapter, info.capability if info else None):
        return False
    os.environ.setdefault("TRITON_INTERPRET", "1")
    if os.environ.get("TRITON_INTERPRET") == "1":
        interpreter.prepare()
    return True


def quiet_session(chapter: int | None = None) -> Session:
    """The session `start()` returns, made without printing or measuring: in the grader's worker, and in
    the verifier, where a test cell's `session` (`session.has_gpu`) is the grader's own, never the
    learner's object."""
    info = gpu_info()
    _interpret(chapter, info)
    return Session(info, cached_ceilings() if info else None)


def start(chapter: int) -> Session:
    # What the learner's cells must not replace or change is noted now, before any of them runs.
    facts.start_watching()
    config.pin()
    if config.quiet_start():
        # Inside the grader's worker process: the same session, without printing or measuring.
        return quiet_session(chapter)
    install_error_display()
    info = gpu_info()
    # Triton kernels defined after this point run on the CPU through Triton's interpreter where this chapter's
    # need it here (it reads the variable when `@triton.jit` decorates a function).
    if interpreted_here(chapter, info.capability if info else None):
        if "triton.language" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
            print("Triton was imported before start(): its kernels would not run on the CPU. Restart the "
                  "notebook kernel (Kernel > Restart) and run the setup cell first.")
        _interpret(chapter, info)
    if info is None:
        print(f"Chapter {chapter}: {gpu_or_reason()[1]}.\n{WHAT_STILL_WORKS}")
        return Session(None, None)
    if os.environ.get("TRITON_INTERPRET") == "1":
        major, minor = INTERPRETED_BELOW[chapter]
        print(f"Chapter {chapter} needs compute capability {major}.{minor} or later for its Triton kernels (fp8 "
              f"tensor cores); {info.name} is {info.cc}, so they run on the CPU through Triton's interpreter at small "
              "sizes: correctness is checked in full, and the speed cells say why they are not graded here.")
    print(f"Chapter {chapter} on {info.name}: compute capability {info.cc}, {info.sm_count} SMs, "
          f"{info.l2_bytes / 2**20:.0f} MiB L2, {info.memory_bytes / 2**30:.0f} GiB")
    ceil = cached_ceilings()
    if ceil is None:
        print("Measuring this GPU's ceilings once (a few seconds; `ladder doctor` does the same)...")
        with captured_stderr():
            ceil = ceilings()
    print(f"Ceilings: copy {ceil.copy_gbps:,.0f} GB/s (read + write), fp32 matmul {ceil.fp32_tflops:.1f} TFLOP/s, "
          f"fp16 matmul {ceil.fp16_tflops:.0f} TFLOP/s (measured {ceil.measured[:10]})")
    return Session(info, ceil)
