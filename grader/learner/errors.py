"""What went wrong in the learner's code, as a message about their code: one translation, used
wherever learner code runs (the notebook's kernel, the grader's worker, the sanitizer's runner).

A released stub is "not written yet" in every form it takes: NotImplementedError raised by a Python
launcher; inside a `@triton.jit` body, a Triton compile error that quotes the `raise` ("unsupported
AST node type: Raise") on a GPU, or an InterpreterError caused by the NotImplementedError on a CPU.
Triton's compile errors keep Triton's own message, which quotes the kernel's line. Anything else
names the exception and the learner's own lines of the traceback, never the grader's or a library's.
"""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path

from ..errors import CheckFailed, KernelCompileError, LadderError, NotImplementedYet

STUB = ("still the released stub: replace `# YOUR CODE HERE` and `raise NotImplementedError()` with your code")
_GRADER = str(Path(__file__).resolve().parents[1])
_LIBRARIES = tuple({p for p in (sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib"),
                                sysconfig.get_paths().get("stdlib")) if p} | {"site-packages", "dist-packages"})


def causes(exc: BaseException):
    """The exception and everything it was raised from, first to last."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _kind(exc: BaseException) -> str | None:
    """"compile" for Triton's compile errors (CompilationError and its subclasses, such as
    UnsupportedLanguageConstruct), "interpreter" for its interpreter's errors, else None."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"CompilationError", "CompileTimeAssertionFailure"}:
        return "compile"
    if "InterpreterError" in names:
        return "interpreter"
    return None


def is_stub(exc: BaseException) -> bool:
    for e in causes(exc):
        if isinstance(e, NotImplementedError):
            return True
        if _kind(e) and "NotImplementedError" in str(e):
            return True
    return False


def learner_frames(exc: BaseException, limit: int = 4) -> str:
    """The learner's part of a traceback: frames outside the grader and outside installed libraries."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_GRADER) and not any(lib in f.filename for lib in _LIBRARIES)]
    return "".join(traceback.format_list(frames[-limit:]))


def translate(exc: BaseException, what: str = "your code") -> LadderError:
    """`exc`, raised by the learner's code while `what` ran, as an error whose message is for the learner."""
    if isinstance(exc, LadderError):
        return exc
    if is_stub(exc):
        return NotImplementedYet(STUB)
    name = type(exc).__name__
    text = str(exc).strip()
    if any("outside of the scope of a kernel" in str(e) for e in causes(exc)) and "triton.language" in sys.modules:
        return CheckFailed("Triton was imported before `start()` switched it to its interpreter, so its library "
                           "functions (tl.max, tl.sum, ...) cannot run on the CPU. Restart the notebook's kernel and "
                           "run the setup cell first.", reason="raised")
    if _kind(exc) == "compile":
        return KernelCompileError(f"{what}: your Triton kernel did not compile.\n{text}")
    if _kind(exc) == "interpreter":
        inner = list(causes(exc))[1:]
        cause = inner[0] if inner else exc
        where = learner_frames(cause)
        return CheckFailed(f"{what}: your Triton kernel failed in the interpreter with {type(cause).__name__}: "
                           f"{cause}" + (f"\nin your code:\n{where}" if where else ""), reason="raised")
    where = learner_frames(exc)
    return CheckFailed(f"{what} raised {name}: {text}" + (f"\nin your code:\n{where}" if where else ""),
                       reason="raised")
