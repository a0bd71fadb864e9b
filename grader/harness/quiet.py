"""Keep graded cells' stderr clean.

nbgrader gives 0 points to a test cell that writes anything to stderr, and torch, Triton, CuPy and
NVRTC all write warnings there. Checks run inside `captured_stderr()`, which collects Python
warnings and everything written to file descriptor 2 (C libraries write there directly, past
`sys.stderr`). On failure the collected text goes into the error message, where it may explain
the failure; on success it is dropped.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field


@dataclass
class Captured:
    text: str = ""
    warnings: list = field(default_factory=list)

    def summary(self, limit: int = 2000) -> str:
        parts = [f"{w.category.__name__}: {w.message}" for w in self.warnings]
        if self.text.strip():
            parts.append(self.text.strip())
        joined = "\n".join(parts)
        return joined if len(joined) <= limit else joined[:limit] + "\n[... cut]"


@contextlib.contextmanager
def captured_stderr():
    """Collect warnings and fd-2 output for the duration of the block."""
    record = Captured()
    py_buffer = io.StringIO()
    try:
        sys.stderr.flush()
    except Exception:  # a closed or odd stderr must not break a check
        pass
    saved_fd = None
    tmp = tempfile.TemporaryFile(mode="w+b")
    try:
        saved_fd = os.dup(2)
        os.dup2(tmp.fileno(), 2)
    except OSError:  # no usable fd 2 (some embedded interpreters): Python-level capture only
        saved_fd = None
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(py_buffer):
            warnings.simplefilter("always")
            try:
                yield record
            finally:
                record.warnings = list(caught)
    finally:
        if saved_fd is not None:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
        tmp.seek(0)
        record.text = tmp.read().decode("utf-8", "replace") + py_buffer.getvalue()
        tmp.close()
