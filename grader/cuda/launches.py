"""Every launch of a learner's kernel passes through here: CUDA C kernels made with `load_kernel`, and
Triton kernels (`@triton.jit`, with or without an autotuner, compiled or interpreted).

Whoever needs to see launches pushes a handler with `intercept(handler)`: the grader's fact gathering
(which kernels ran, which raised), the no-op probe (launches switched off), recording without running
(chapter 4's inspection), tensor-core counting (an instrumented copy runs instead), the sanitizer
(line information, which kernels each exercise launched). A handler receives a `Launch` and returns
its result: it may call `launch.proceed()` (the handlers below it, then the kernel), skip the launch,
or run something else in its place. Handlers nest; the last one pushed sees each launch first.

CudaKernel calls `dispatch` itself; Triton's classes are wrapped once (`install_triton`), the first
time a handler is pushed after Triton was imported, so importing this module imports nothing.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

# Handlers from the bottom of the stack to the top. One stack for the whole process, not per thread:
# a kernel a learner launches from a thread of their own must be seen like any other.
_HANDLERS: list[Callable[["Launch"], Any]] = []
_DEPTH = threading.local()


@dataclass
class Launch:
    """One launch, as handlers see it.

    kind: "cuda" (a CudaKernel), "triton" (a JITFunction or the interpreter's function), or
    "autotune" (an Autotuner or Heuristics object choosing a configuration: not a kernel, but the
    launches inside it are its own, and an error it raises reaches the learner's code).
    """
    kind: str
    name: str
    kernel: Any
    run_original: Callable[[], Any]          # the launch itself, past every handler
    grid: Any = None                         # CUDA: as given to the kernel
    block: Any = None
    args: Any = ()                           # CUDA: kernel arguments; Triton: positional arguments
    kwargs: dict = field(default_factory=dict)
    shared_mem: int = 0
    run: Callable | None = None              # Triton: the class's own `run`, unwrapped (`run(fn, *a, **kw)`)
    _below: int = -1                         # index of the next handler to call

    @property
    def is_kernel(self) -> bool:
        return self.kind in ("cuda", "triton")

    def proceed(self) -> Any:
        """Run the launch through the handlers below the current one, then for real."""
        index = self._below
        if index < 0:
            return self.run_original()
        self._below = index - 1
        try:
            return _HANDLERS[index](self)
        finally:
            self._below = index


def depth() -> int:
    """How many launches are in progress on this thread (a launch inside an autotuner counts 2)."""
    return getattr(_DEPTH, "value", 0)


def dispatch(launch: Launch) -> Any:
    """Hand a launch to the handlers, top first."""
    _DEPTH.value = depth() + 1
    try:
        launch._below = len(_HANDLERS) - 1
        return launch.proceed()
    finally:
        _DEPTH.value -= 1


@contextlib.contextmanager
def intercept(handler: Callable[[Launch], Any]):
    """Inside the block, `handler` sees every launch first."""
    install_triton()
    _HANDLERS.append(handler)
    try:
        yield handler
    finally:
        _HANDLERS.remove(handler)


# ------------------------------------------------------------------------------------ Triton

_TRITON_WRAPPED: set[type] = set()


def triton_name(fn) -> str:
    """The name of the Python function behind a Triton kernel, autotuner or interpreted function."""
    inner = getattr(fn, "fn", None)
    while inner is not None and hasattr(inner, "fn") and not hasattr(inner, "__code__"):
        inner = inner.fn
    return getattr(inner, "__name__", None) or getattr(fn, "__name__", type(fn).__name__)


def _wrap(cls: type, kind: str) -> None:
    original = vars(cls)["run"]

    def run(self, *args, **kwargs):
        if not _HANDLERS:
            return original(self, *args, **kwargs)
        return dispatch(Launch(kind, triton_name(self), self, lambda: original(self, *args, **kwargs), args=args,
                               kwargs=kwargs, run=original))

    run.__wrapped__ = original
    cls.run = run
    _TRITON_WRAPPED.add(cls)


def install_triton() -> None:
    """Wrap Triton's launch methods once, if Triton has been imported. Never imports it: without a GPU,
    `start()` must switch Triton to its interpreter before anything imports it."""
    import sys

    if "triton" not in sys.modules:
        return
    targets = []
    try:
        from triton.runtime.jit import JITFunction
        targets.append((JITFunction, "triton"))
    except ImportError:
        return
    try:
        from triton.runtime.interpreter import InterpretedFunction
        targets.append((InterpretedFunction, "triton"))
    except ImportError:
        pass
    try:
        from triton.runtime import autotuner
        targets += [(getattr(autotuner, n), "autotune") for n in ("Autotuner", "Heuristics") if hasattr(autotuner, n)]
    except ImportError:
        pass
    for cls, kind in targets:
        if cls not in _TRITON_WRAPPED and "run" in vars(cls):
            _wrap(cls, kind)
