"""The verifier: one fresh process per graded test cell, forked by grader.isolation.isolate.

It takes a `Job` (the learner's cells, the test cell's source), starts a worker that
runs the learner's cells, binds every name the test cell uses to a stand-in for the worker's object
(a `RemoteFunction` for a function), and runs the test cell's own source here, with the grader's
checks. The learner's code never runs in this process. What the checks print goes to stdout (it
becomes the cell's output); the `Verdict` goes back over a connection the worker does not hold.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
import sys
import time

from .. import chapters, config
from ..cuda import sharing
from ..errors import DEFERRED, LadderError
from . import rules
from .messages import Job, Verdict


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


def run(job: Job, worker_method: str = "spawn", private: tuple = ()) -> Verdict:
    sharing.clear()
    verdict = _judge(job, worker_method, private)
    if sharing.deferred():
        # On a GPU shared with other checks (grader.cuda.sharing), something would have been timed. Whatever
        # the check made of it (it may have caught NeedsOwnGPU on the way), the verdict is no verdict: the
        # notebook's executor runs the check again with the GPU to itself.
        return Verdict(False, DEFERRED, f"{job.test_name}: {sharing.deferred()} needs the GPU to itself; checked "
                       "again when the notebook reaches the cell", seconds=verdict.seconds,
                       load_seconds=verdict.load_seconds)
    return verdict


def _judge(job: Job, worker_method: str, private: tuple) -> Verdict:
    from .remote import RemoteFunction, WorkerHandle

    start = time.perf_counter()
    load_seconds = 0.0
    handle = WorkerHandle(worker_method, private)
    try:
        loaded = handle.load(job.cells, job.outcomes)
        load_seconds = time.perf_counter() - start
        if loaded.tampered:
            raise rules.tampered(loaded.tampered)
        ns: dict = {"__name__": "__ladder_test__"}
        import numpy as np
        import torch
        ns.update(np=np, torch=torch)
        for name in sorted(set(re.findall(r"\b(ch\d\d)\.", job.test))):
            ns[name] = chapters.module(name)
        if "session" in _names_used(job.test):
            # Hidden tests choose their sizes by `session.has_gpu`: the grader's own session for this
            # machine answers, not the learner's object (which would reach the verifier as a stand-in).
            from ..harness.session import quiet_session
            ns["session"] = quiet_session()
        wanted = [n for n in _names_used(job.test) if n not in ns]
        if wanted:
            for name, (kind, value) in handle.describe(wanted).kinds.items():
                if kind in ("callable", "opaque"):
                    ns[name] = RemoteFunction(handle, name)
                elif kind == "value":
                    ns[name] = value
        try:
            exec(compile(job.test, f"<test cell {job.test_name}>", "exec"), ns)
        except NameError as exc:
            raise rules.not_defined(getattr(exc, "name", None) or str(exc), loaded.problems) from None
        return Verdict(True, None, "", seconds=time.perf_counter() - start, values=_assigned_values(job.test, ns),
                       load_seconds=load_seconds)
    except sharing.NeedsOwnGPU:
        return Verdict(False, DEFERRED, "", seconds=time.perf_counter() - start, load_seconds=load_seconds)
    except LadderError as exc:
        text = str(exc.args[0]) if exc.args else str(exc)
        return Verdict(False, exc.reason, text[:config.MAX_VERDICT_MESSAGE], seconds=time.perf_counter() - start,
                       cls=type(exc).__name__, load_seconds=load_seconds)
    except (NotImplementedError, AssertionError) as exc:
        return Verdict(False, rules.reason_for(exc), str(exc)[:config.MAX_VERDICT_MESSAGE] or
                       "still the released stub: replace `raise NotImplementedError()` with your code",
                       seconds=time.perf_counter() - start,
                       cls="NotImplementedYet" if isinstance(exc, NotImplementedError) else type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - a fault in the grader: say so plainly
        import traceback
        return Verdict(False, "failed", f"the grader failed while checking ({type(exc).__name__}: {exc}); this is a "
                       f"grader bug, please report it.\n{traceback.format_exc()[-3000:]}",
                       seconds=time.perf_counter() - start, cls=type(exc).__name__)
    finally:
        handle.close()


def forked(job: Job, environ: dict, cwd: str | None, verdict_conn, stdout_path: str, stderr_path: str) -> None:
    """Entry point of a verifier forked from grader.isolation.isolate's server (which imported torch and
    this module, and nothing else). It takes the asking process's environment and folder as they are
    now, leads a process group of its own (so that a time limit stops it and its worker together),
    writes what the checks print to `stdout_path`, and sends the `Verdict` over `verdict_conn`, which
    the worker, forked before any learner code runs, closes."""
    os.setsid()
    os.environ.clear()
    os.environ.update(environ)
    if cwd:
        os.chdir(cwd)
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        target = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    verdict = run(job, worker_method="fork", private=(verdict_conn,))
    verdict.cpu_seconds = round(_cpu_seconds(), 3)
    sys.stdout.flush()
    verdict_conn.send_bytes(json.dumps(verdict.as_dict()).encode())
    verdict_conn.close()



def _cpu_seconds() -> float:
    """CPU time of this verifier and of the worker it forked and has reaped (a forked child's counts start at 0)."""
    import resource

    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))
