"""Graded checks in the grader's own processes: how `ladder grade` (and `ladder check --isolated`) checks a test cell.

A check is described by data only: the learner's cells (the notebook's setup cell and its solution
cells before the test cell, taken from the notebook file, never from a running kernel), how each of
those cells ended in the notebook's kernel when that is known, and the test cell's own source (in
nbgrader's autograde, restored from the gradebook).

`check_sources` checks in a session (`CheckSession`): a verifier (which never executes learner code) forked, in a
new process group, from this process's fork server (grader.isolation.server), which imported torch once, and a
worker the verifier forks to run the learner's cells; they check one check at a time. A notebook's run passes its
`CheckSessions`, a few such sessions; any other check (`ladder calibrate`, `check_cell`) gets a session used once.
The verdict comes back over a socket only the verifier holds. Nothing the notebook's own kernel did (patched
torch, a patched timer or grader, cached tensors, a broken CUDA context) can reach it. docs/isolation.md describes
the design.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path

from .. import config, processes
from ..errors import DEFERRED
from ..learner import cells as nbcells
from ..learner.code import KernelOutcome
from ..calls.messages import Job, SessionCheck, Verdict, extends
from . import server


def check_cell(nb, grade_id: str, timeout_s: float | None = None, cwd: str | None = None) -> Verdict:
    """Run one autograded test cell of the notebook `nb` (a path) against the learner's cells, isolated."""
    path = Path(nb).resolve() if isinstance(nb, (str, Path)) else None
    return check_sources(nbcells.learner_cells(nb, grade_id), nbcells.test_source(nb, grade_id), grade_id, timeout_s,
                         cwd or (str(path.parent) if path else None))


class _Server(server.Started):
    """This process's handle on its fork server (grader.isolation.server), started on the first check
    and kept for the process's life, ended at its exit; started again if it died."""

    def __init__(self):
        super().__init__("grader.isolation.server", _environ())
        self.lock = threading.Lock()

    def fork(self, request: server.Fork) -> tuple[int, int]:
        """(pid, read end of the verdict's pipe) of a verifier forked for `request`."""
        with self.lock:
            server.send(self.sock, request)
            return server.receive(self.sock, with_fd=True)

    def exit_code(self, pid: int) -> int | None:
        with self.lock:
            server.send(self.sock, server.Status(pid))
            return server.receive(self.sock)


_SERVER: _Server | None = None


def _environ() -> dict:
    """This process's environment, with this copy of the grader first on the import path, and no folder put
    before it by where a process starts (PYTHONSAFEPATH): the fork server, started in whatever folder
    `ladder check` runs in, and every Python process a check starts, in the notebook's folder, import torch
    and Triton from where they are installed, never a `torch.py` a learner's cell wrote into that folder."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONSAFEPATH"] = "1"
    return env


_SERVER_LOCK = threading.Lock()   # checks may be asked for from several threads (grader.isolation.ahead)


def _server() -> _Server:
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or not _SERVER.alive():
            if _SERVER is not None:   # it died: its socket is closed and its exit collected
                _SERVER.close()
            _SERVER = _Server()
        return _SERVER


def check_sources(cells: list[tuple[str, str]], source: str, name: str = "test", timeout_s: float | None = None,
                  cwd: str | None = None, outcomes: dict[str, KernelOutcome] | None = None,
                  shared_gpu: bool = False, cancel: threading.Event | None = None,
                  session: CheckSession | CheckSessions | None = None, hung_record: str | None = None,
                  grader_run: bool = False) -> Verdict:
    """The verdict of one check. `shared_gpu`: it runs beside other checks of the same student on one GPU
    (grader.isolation.ahead), and is deferred if it would time anything (grader.cuda.sharing). `cancel`, once
    set, stops the check's processes and makes its verdict "deferred" (a check ahead that is no longer wanted).
    `session`: the notebook run's sessions (CheckSessions: the idle one that suits it), or one of them that a check
    ahead took (CheckSession), check it; else a session used once. `hung_record`, `grader_run`: the
    notebook run's, where the check is one of a run's (grader.notebooks.nbexec; messages.Job)."""
    timeout_s = timeout_s or config.cell_timeout_s()
    job = Job(list(cells), source, name, dict(outcomes or {}), shared_gpu, hung_record, grader_run)
    env = _environ()
    with tempfile.TemporaryDirectory(prefix="ladder-check-") as tmp:
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        for path in (out_path, err_path):
            open(path, "wb").close()
        if session is not None:
            return session.check(job, env, cwd, out_path, err_path, timeout_s, cancel)
        once = CheckSession()
        try:
            return once.check(job, env, cwd, out_path, err_path, timeout_s, cancel)
        finally:
            once.close()


class _Child:
    """A verifier forked from the fork server, and the asking end of its verdict's socket."""

    def __init__(self, fork_server: _Server, pid: int, fd: int):
        from multiprocessing.connection import Connection

        self.fork_server, self.pid, self.conn = fork_server, pid, Connection(fd)
        # The fork server's child, not this process's: the server reaps it, and its number may then be another's.
        proc = processes.read(pid)
        self.started = proc.started if proc is not None else None

    def stop(self) -> None:
        """Stop the verifier and everything below it: its worker and whatever the learner's code started, in
        whatever session (grader.processes: the verifier adopts what is orphaned below it)."""
        if self.started is not None:
            processes.end_tree(self.pid, started=self.started)
        self.conn.close()


def _verdict(child: _Child, job: Job, start: float, timeout_s: float, cancel: threading.Event | None, out_path: str,
             err_path: str) -> Verdict:
    """The verdict `child`, a session's verifier, sends for `job`, or the one its silence earns. The verifier is
    stopped where the session is over: its verdict says so, or none came."""
    name = job.test_name
    raw = b""
    over = True
    try:
        if _wait(child.conn, start + timeout_s, cancel):
            try:
                raw = child.conn.recv_bytes()
            except (EOFError, OSError):  # it ended without a verdict
                raw = b""
        elif cancel is not None and cancel.is_set():
            return Verdict(False, DEFERRED, f"{name}: stopped before its verdict (no longer needed ahead)",
                           _read(out_path), time.perf_counter() - start)
        else:
            return Verdict(False, "timed-out", f"{name}: timed out after {timeout_s:.0f} s; the processes running "
                           "the check were stopped, which frees the GPU.", _read(out_path),
                           time.perf_counter() - start, "CheckTimedOut")
        if raw:
            v = json.loads(raw)
            over = v.pop("session_over", True)
            v["stdout"] = _read(out_path)
            return Verdict(**v)
        code = _exit_code(child.fork_server, child.pid)
        tail = _read(err_path).strip()[-2000:]
        return Verdict(False, "crashed", f"{name}: the grader's checking process ended without a verdict "
                       f"({code}).\n{tail}", _read(out_path), time.perf_counter() - start, "WorkerCrashed")
    finally:
        if over:
            child.stop()


class CheckSession:
    """One verifier and one worker for the checks of one notebook run, which they check one at a time (a run has a
    few: CheckSessions), or for one check of no run (check_sources uses it once, then closes it).

    Why: each process that starts CUDA takes the NVIDIA driver's lock, one for the machine. A fresh verifier
    and worker per check made a student's eight checks sixteen CUDA starts, and four students graded at once on
    four GPUs waited on each other in that lock (assets/results/class-grading/driver-lock-h100x4). A session
    starts CUDA twice for the notebook, and runs each learner cell once.

    What a check sees is what it would see in a session used once, but for what the learner's own functions kept
    from an earlier check of the same notebook (as in the notebook's kernel, where the cells run in the same order):
    the worker runs the cells a check adds after those it ran, and begins each check by letting go of what the
    last one bound (grader.isolation.worker). The grader's side keeps nothing from a check but its caches.
    A check whose cells do not extend the ones the worker ran (a cell that ended otherwise than assumed, a check
    run again out of order), and any check after one that timed out, crashed or tampered with the connection,
    gets a new session: a verifier forked from the fork server, with a fresh worker."""

    def __init__(self):
        self.child: _Child | None = None
        self.cwd: str | None = None
        self.cells: list[tuple[str, str]] = []
        self.outcomes: dict[str, KernelOutcome] = {}
        self.lock = threading.Lock()
        self.started = 0   # sessions started: verifier-and-worker pairs, for the run's record

    def fits(self, cells, outcomes: dict[str, KernelOutcome], cwd: str | None) -> bool:
        """Whether the session's worker can check `cells`, ended as `outcomes` says: it ran no cell they do not
        start with, ended as they say it ended."""
        return self.child is not None and cwd == self.cwd and extends(cells, outcomes, self.cells, self.outcomes)

    def check(self, job: Job, env: dict, cwd: str | None, out_path: str, err_path: str, timeout_s: float,
              cancel: threading.Event | None) -> Verdict:
        with self.lock:
            if not self.fits(job.cells, job.outcomes, cwd):
                self._new(env, cwd)
            start = time.perf_counter()
            try:
                self.child.conn.send(SessionCheck(job, env, out_path, err_path))
            except (BrokenPipeError, ConnectionError, OSError):   # it ended since: a new one checks this job
                self._new(env, cwd)
                self.child.conn.send(SessionCheck(job, env, out_path, err_path))
            self.cells = [tuple(c) for c in job.cells]
            self.outcomes = {name: job.outcomes[name] for name, _ in job.cells if name in job.outcomes}
            child = self.child
            verdict = _verdict(child, job, start, timeout_s, cancel, out_path, err_path)
            if child.conn.closed:
                self.child = None
            return verdict

    def _new(self, env: dict, cwd: str | None) -> None:
        self.close()
        fork_server = _server()
        pid, fd = fork_server.fork(server.Fork(env, cwd))
        self.child, self.cwd, self.cells, self.outcomes = _Child(fork_server, pid, fd), cwd, [], {}
        self.started += 1

    def close(self) -> None:
        """Stop the session's verifier and worker (the notebook's run is over)."""
        if self.child is not None:
            self.child.stop()
            self.child = None


class CheckSessions:
    """The sessions of one notebook run: `width` CheckSessions, so that that many of its checks run at once, each
    in a session of its own. Sessions are started only when a check needs one.

    Why more than one: a session checks one check at a time. Where a notebook's checks spend their time compiling
    the learner's kernels on the CPU, one after another they make the student wait for their sum: alone on an H200,
    a correct chapter-5 student took 61 s in one session, 39 s in four, and 40 s with a fresh pair for each check,
    eight at once (assets/results/class-grading/sessions-width-h200). `width` sessions start CUDA 2 x `width` times
    for the notebook, whatever its number of checks.

    A check ahead whose verdict cannot stand (deferred because it would time, or out of memory beside its
    neighbours) leaves its session reserved for that check: the notebook checks that cell again alone, and the
    reserved session's worker has run exactly its cells. Checks ahead take only sessions not reserved
    (`take`): where every idle session is reserved, the next check ahead waits for the notebook to reach a cell."""

    def __init__(self, width: int = 1):
        self.sessions = [CheckSession() for _ in range(max(1, width))]
        self.idle = list(self.sessions)
        self.reserved: dict[CheckSession, str] = {}   # a session -> the check it waits for
        self.changed = threading.Condition()

    @property
    def width(self) -> int:
        return len(self.sessions)

    @property
    def started(self) -> int:
        """Verifier-and-worker pairs started, all sessions together, for the run's record."""
        return sum(session.started for session in self.sessions)

    def take(self, cells, outcomes: dict[str, KernelOutcome], cwd: str | None,
             name: str | None = None) -> CheckSession | None:
        """An idle session for a check of `cells`, ended as `outcomes` says, named `name`, or None where none is
        idle. A check ahead (no `name`) gets no reserved session. The notebook's own check of a cell gets the
        session reserved for that cell; else an idle one not reserved, or, where every idle one is, a reserved one
        (the notebook never waits for a check ahead it has not reached)."""
        with self.changed:
            for session in self.idle:
                if name is not None and self.reserved.get(session) == name:
                    return self._taken(session)
            free = [s for s in self.idle if s not in self.reserved] or (self.idle if name is not None else [])
            return self._taken(_soonest(free, cells, outcomes, cwd)) if free else None

    def _taken(self, session: CheckSession) -> CheckSession:
        self.idle.remove(session)
        self.reserved.pop(session, None)
        return session

    def give_back(self, session: CheckSession, reserve_for: str | None = None) -> None:
        """`session` is idle again; `reserve_for`: kept for the notebook's check of that cell."""
        with self.changed:
            if reserve_for is not None and session.child is not None:
                self.reserved[session] = reserve_for
            self.idle.append(session)
            self.changed.notify_all()

    def check(self, job: Job, env: dict, cwd: str | None, out_path: str, err_path: str, timeout_s: float,
              cancel: threading.Event | None) -> Verdict:
        """The notebook's own check of a cell, in the idle session that suits it best; it waits for one (checks
        ahead keep theirs only while they run)."""
        with self.changed:
            while (session := self.take(job.cells, job.outcomes, cwd, job.test_name)) is None:
                self.changed.wait()
        try:
            return session.check(job, env, cwd, out_path, err_path, timeout_s, cancel)
        finally:
            self.give_back(session)

    def close(self) -> None:
        """Stop every session's verifier and worker (the notebook's run is over)."""
        for session in self.sessions:
            session.close()


def _soonest(sessions: list[CheckSession], cells, outcomes: dict[str, KernelOutcome], cwd: str | None) -> CheckSession:
    """Of `sessions`, the one that checks `cells` soonest: whose worker ran the most of them; else one not started;
    else the one that ran the fewest cells, the least work lost in starting it again."""
    fitting = [s for s in sessions if s.fits(cells, outcomes, cwd)]
    if fitting:
        return max(fitting, key=lambda s: len(s.cells))
    return min(sessions, key=lambda s: (s.child is not None, len(s.cells)))


def _wait(verdict, deadline: float, cancel: threading.Event | None) -> bool:
    """Whether the verdict's pipe has something to read before `deadline` (perf_counter) or `cancel`."""
    if cancel is None:
        return verdict.poll(max(0.0, deadline - time.perf_counter()))
    while not cancel.is_set():
        if verdict.poll(min(0.25, max(0.0, deadline - time.perf_counter()))):
            return True
        if time.perf_counter() >= deadline:
            return False
    return False


def _exit_code(fork_server: _Server, pid: int) -> str:
    for _ in range(50):
        code = fork_server.exit_code(pid)
        if code is not None:
            return f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        time.sleep(0.1)
    return "exit status unknown"


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def server_pid() -> int | None:
    """The pid of this process's fork server, where one runs: a child of this process in a session of its own
    that is the grader's, not a learner's (grader.notebooks.nbexec ends those)."""
    return _SERVER.proc.pid if _SERVER is not None and _SERVER.alive() else None
