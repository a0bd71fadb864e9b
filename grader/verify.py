"""The verifier: `python -m grader.verify VERDICT_FD`, one fresh process per graded test cell.

It reads a job (JSON on stdin: the learner's cells, the test cell's source), starts a worker that
executes the learner's cells, binds every name the test cell uses to a stand-in for the worker's
object, and executes the test cell's own source here, with the grader's checks. The learner's code
never runs in this process. What the checks print goes to stdout (it becomes the cell's output);
the verdict goes to the file descriptor given on the command line, which the worker does not hold.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
import sys
import time

MAX_MESSAGE = 12000


def _names_used(source: str) -> list[str]:
    tree = ast.parse(source)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in names:
            names.append(node.id)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return [n for n in names if n not in assigned and not hasattr(builtins, n)]


def _assigned_values(source: str, ns: dict) -> str | None:
    """The grader's results the test cell assigned (SpeedResult, ...), pickled for the notebook's kernel.

    Only values made by the grader itself, or None, are passed: later cells plot them.
    """
    import base64
    import pickle

    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    out = {}
    for name in names:
        value = ns.get(name)
        if value is None or type(value).__module__.startswith("grader."):
            try:
                pickle.dumps(value)
            except Exception:
                continue
            out[name] = value
    if not out:
        return None
    return base64.b64encode(pickle.dumps(out)).decode()


def run(job: dict) -> dict:
    from . import errors
    from .device import gpu_or_reason
    from .remote import RemoteFunction, WorkerHandle

    start = time.perf_counter()
    has_gpu = gpu_or_reason()[0]
    test_name = job.get("test_name", "test")
    source = job["test"]
    handle = WorkerHandle(has_gpu)
    try:
        loaded = handle.request(("load", [tuple(c) for c in job["cells"]]), float(job.get("load_timeout_s", 300)),
                                "running your notebook's cells")
        if loaded.get("tampered"):
            raise errors.CheckFailed(
                f"your notebook's cells replaced {', '.join(loaded['tampered'][:6])}. The grader's timer, comparisons "
                "and checks must be left as they are (the verdict is computed in a separate process anyway).",
                reason="tampered")
        ns: dict = {"__name__": "__ladder_test__"}
        import numpy as np
        import torch
        ns.update(np=np, torch=torch)
        for chapter in sorted(set(re.findall(r"\b(ch\d\d)\.", source))):
            ns[chapter] = __import__(f"grader.chapters.{chapter}", fromlist=["x"])
        wanted = [n for n in _names_used(source) if n not in ns]
        missing = []
        if wanted:
            for name, (kind, value) in handle.request(("describe", wanted), 60, "looking up your names").items():
                if kind == "callable" or kind == "opaque":
                    ns[name] = RemoteFunction(handle, name)
                elif kind == "value":
                    ns[name] = value
                else:
                    missing.append(name)
        try:
            exec(compile(source, f"<test cell {test_name}>", "exec"), ns)
        except NameError as exc:
            name = getattr(exc, "name", None) or str(exc)
            note = "\n".join(loaded.get("problems", [])[:5])
            raise errors.NotImplementedYet(
                f"your notebook does not define `{name}`, which this test uses"
                + (f".\nRunning your cells met these problems:\n{note}" if note else
                   ". Define it in the exercise's answer cell.")) from None
        return {"passed": True, "reason": None, "message": "", "seconds": time.perf_counter() - start,
                "values": _assigned_values(source, ns)}
    except errors.LadderError as exc:
        text = str(exc.args[0]) if exc.args else str(exc)
        return {"passed": False, "reason": exc.reason, "cls": type(exc).__name__, "message": text[:MAX_MESSAGE],
                "seconds": time.perf_counter() - start}
    except NotImplementedError:
        return {"passed": False, "reason": "not-written", "cls": "NotImplementedYet",
                "message": "still the released stub: replace `raise NotImplementedError()` with your code",
                "seconds": time.perf_counter() - start}
    except AssertionError as exc:
        return {"passed": False, "reason": "failed", "cls": "AssertionError", "message": str(exc)[:MAX_MESSAGE],
                "seconds": time.perf_counter() - start}
    except Exception as exc:  # noqa: BLE001 - a fault in the grader: say so plainly
        import traceback
        return {"passed": False, "reason": "failed", "cls": type(exc).__name__,
                "message": f"the grader failed while checking ({type(exc).__name__}: {exc}); this is a grader "
                           f"bug, please report it.\n{traceback.format_exc()[-3000:]}",
                "seconds": time.perf_counter() - start}
    finally:
        handle.close()


def main() -> int:
    fd = int(sys.argv[1])
    job = json.loads(sys.stdin.read())
    verdict = run(job)
    sys.stdout.flush()
    data = json.dumps(verdict).encode()
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
