"""The verifier: a session's process, forked by grader.isolation.isolate's fork server, that checks a notebook
run's cells in turn, or one check of no run (`serve`).

It takes a `Job` (the learner's cells, the test cell's source), has its worker run the learner's cells (each
cell once, those a later check adds after the ones an earlier check ran), binds every name the test cell uses
to a stand-in for the worker's object (a `RemoteFunction` for a function), and runs the test cell's own source
here, with the grader's checks. The learner's code never runs in this process. What the checks print goes to
stdout (it becomes the cell's output); the `Verdict` goes back over a connection the worker does not hold.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
import sys
import time

from .. import chapters, config, processes
from ..cuda import sharing
from ..errors import DEFERRED, LadderError
from ..calls import rules
from ..calls.messages import Job, Verdict
from . import hung


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


def run(job: Job, worker_method: str = "spawn", private: tuple = (), handle=None) -> Verdict:
    """The verdict on `job`, from a worker started for it (`worker_method`, `private`: see
    grader.isolation.remote.WorkerHandle), or from `handle`, a session's worker, kept open afterwards."""
    sharing.clear()
    # How this check runs, from its Job: a session's verifier serves checks ahead and alone, of one run, in turn.
    sharing.set_shared(job.shared_gpu)
    hung.use_record(job.hung_record)
    config.set_grader_run(job.grader_run)
    ended: list[str] = []
    verdict = _judge(job, worker_method, private, handle, ended)
    verdict.ended = ended
    if sharing.deferred():
        # On a GPU shared with other checks (grader.cuda.sharing), something would have been timed: here, or in a
        # call of the learner's code (a fact of the call, judged by rules.enforce). Whatever the check made of it
        # (it may have caught NeedsOwnGPU on the way), the verdict is no verdict: the notebook's executor runs the
        # check again with the GPU to itself.
        return Verdict(False, DEFERRED, f"{job.test_name}: {sharing.deferred()} needs the GPU to itself; checked "
                       "again when the notebook reaches the cell", seconds=verdict.seconds,
                       load_seconds=verdict.load_seconds, ended=verdict.ended)
    return verdict


def _judge(job: Job, worker_method: str, private: tuple, session_handle=None, ended: list | None = None) -> Verdict:
    """The verdict on `job`; a worker started for it (no `session_handle`) is stopped afterwards, and what
    was running below it is added to `ended`."""
    from .remote import RemoteFunction, WorkerHandle

    start = time.perf_counter()
    load_seconds = 0.0
    handle = session_handle or WorkerHandle(worker_method, private)
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
        if session_handle is None:
            handle.close()
            if ended is not None:
                ended += handle.ended


def serve(conn, environ: dict, cwd: str | None) -> None:
    """Entry point of a session's verifier (grader.isolation.isolate.CheckSession), forked from grader.isolation.
    isolate's server (which imported torch and this module, and nothing else): the checks of one notebook run, in
    turn, with one worker, or one check of no run. Why one pair for a run's checks: every process that starts CUDA
    takes the NVIDIA driver's lock, one for the machine, and a fresh verifier and worker per check made a student's
    eight checks sixteen such starts; with four students graded at once on four GPUs they waited on each other there
    (assets/results/class-grading/driver-lock-h100x4). A session makes them two.

    It takes the asking process's environment and folder as they are at each check, leads a session of its own and
    adopts whatever is orphaned below it (grader.processes: a time limit ends it with its whole tree, and it ends
    the learner's processes when each check ends), writes what the checks print to each check's files, and sends
    each `Verdict` over `conn`, which the worker, forked before any learner code runs, closes.

    Each request is a `SessionCheck`; the worker is forked at the first, before this process touches CUDA,
    and runs only the cells a check adds after those it ran (grader.isolation.remote.WorkerHandle.load,
    which refuses a check whose cells do not extend them: the asking process starts a new session for it).
    Each verdict says whether the session is over: once its worker died, was stopped or tampered with the
    connection, a verifier that started CUDA cannot fork another, so the next check gets a new session."""
    from .remote import WorkerHandle

    os.setsid()
    processes.become_subreaper()
    os.environ.clear()
    os.environ.update(environ)
    if cwd:
        os.chdir(cwd)
    handle = None
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            break   # the asking process closed the session
        os.environ.clear()
        os.environ.update(request.environ)
        _output_to(request.stdout_path, request.stderr_path)
        if handle is None:
            handle = WorkerHandle("fork", private=(conn,))
        before = _cpu_seconds(handle.proc.pid)
        verdict = run(request.job, handle=handle)
        verdict.cpu_seconds = round(_cpu_seconds(handle.proc.pid) - before, 3)
        over = bool(handle.dead) or not handle.proc.is_alive()
        verdict.ended += _end_learner_processes(handle)
        _release_between_checks()
        sys.stdout.flush()
        conn.send_bytes(json.dumps({**verdict.as_dict(), "session_over": over}).encode())
        if over:
            break
    if handle is not None:
        handle.close()
    conn.close()


END_PASSES = 10


def _end_learner_processes(handle) -> list[str]:
    """End every process the learner's code started that still runs as its check ends: the worker's tree but
    the worker itself (`handle`, which checks the next cell if it still runs), and every process this verifier
    adopted from it (grader.processes: the worker runs in a session of its own, so
    whatever this verifier adopted from it is in another session than this verifier's own children, such as
    Inductor's compile workers for the course's torch.compile comparisons). Returns what was ended, for the
    cell's record."""
    ended, handle.ended = handle.ended, []   # what went with a worker killed during the check
    # Until two passes in a row end nothing (at most END_PASSES: a thread the learner's code left in the worker may
    # start processes without end, and the worker's next check ends them again): a process's `children` file may
    # miss a child being forked or reparented while it is read (proc(5): reliable only while the children are
    # stopped), and a daemon's second half, orphaned as its first half was killed, is adopted by the worker after
    # the pass that listed the worker's tree. With one pass, such a daemon outlived its check in a suite run on a
    # busy 2-core machine (tests/isolation/test_containment.py).
    quiet = passes = 0
    while quiet < 2 and passes < END_PASSES:
        passes += 1
        found = []
        if handle.proc.is_alive():
            found += processes.end_tree(handle.proc.pid, include_root=False)
        worker = {handle.proc.pid} if handle.proc.is_alive() else set()
        found += processes.end_all(processes.adopted(exclude=worker))
        ended += found
        quiet = 0 if found else quiet + 1
    return ended


def _release_between_checks() -> None:
    """Free what a session's check left on the GPU (its inputs, references, what the worker mapped of them),
    so that the next check starts with the memory a new session's verifier would have."""
    import gc

    gc.collect()
    import torch

    if torch.cuda.is_initialized():
        torch.cuda.ipc_collect()
        torch.cuda.empty_cache()


def _output_to(stdout_path: str, stderr_path: str) -> None:
    """What this verifier prints, from now on, into the check's files (the cell's output, the log)."""
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        target = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def _cpu_seconds(worker_pid: int) -> float:
    """CPU time of this verifier and of the children it reaped (a worker that died: a forked child's counts start
    at 0), and of `worker_pid`, its worker that still runs, as the kernel counts it (/proc, on Linux)."""
    import resource

    own = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    try:
        with open(f"/proc/{worker_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime
    except (OSError, ValueError, IndexError):
        return own
