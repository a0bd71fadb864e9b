"""The processes below a grader's process, found and ended: nothing a learner's code starts outlives its check.

A learner's launcher can start a process that leaves its parent's reach: `subprocess.Popen(...,
start_new_session=True)` leaves the process group a time limit kills, and a double fork (a daemon) leaves its
parent altogether, for init. Three facts of Linux, all available to an unprivileged process and in a
container, keep such a process within the grader's reach:
- a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`) adopts every process orphaned below it, instead of
  init: a chain of them (the grader's processes) keeps every descendant under the nearest one still running;
- a *session* (`setsid`) cannot be joined, only left for a new one: a process a learner's code started
  carries the session of the process that ran the code (the worker's, the notebook kernel's) or one of its
  own, never the session of the grader's process that adopts it, which tells an adopted process from the
  grader's own children;
- a stopped process (SIGSTOP) cannot fork: a tree stopped from the top down, then killed, leaves nothing.

A cgroup would add nothing here: one a grader's process may write to, a process of the same user may leave
(docs/isolation.md, "Nothing a check starts outlives it"). Elsewhere than Linux every function here finds
nothing and ends nothing. Written by hand: psutil would add a dependency for `/proc` reads that fit here.

Some processes below a learner's code are torch's, not the learner's: Inductor's compile workers, which the first
`torch.compile` in a process starts and keeps (`torchs_own`). They end with the rest of a tree, and are never
reported as the learner's, by a call's facts (grader.calls.facts) or by a notebook's run (`end_tree`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36   # linux/prctl.h
PR_GET_CHILD_SUBREAPER = 37
# The processes torch starts for itself, by a path in their command lines: Inductor's compile-worker pool
# (`torch/_inductor/compile_worker/__main__.py`, started on the first compile in a process and kept for the
# next, with its workers below it).
TORCH_PROCESSES = ("torch/_inductor/compile_worker",)
# Rounds of stopping before the kill: each round stops what the last one found, and a stopped process
# forks no more, so a tree ends in as many rounds as it is deep (a fork bomb included).
STOP_ROUNDS = 50


@dataclass(frozen=True)
class Proc:
    """One process as /proc/PID/stat shows it."""
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str        # R, S, D, T, Z, ...
    started: int      # clock ticks after boot: with `pid`, what tells it from a later process given its number

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X", "x")

    def command(self, limit: int = 120) -> str:
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            return "?"
        text = " ".join(w.decode("utf-8", "replace") for w in words if w)
        return text if len(text) <= limit else text[:limit - 3] + "..."

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command()})"


def supported() -> bool:
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def read(pid: int) -> Proc | None:
    """The process `pid` now, or None where it is gone (or /proc cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name in parentheses may hold spaces and parentheses: the fields start after the last ")".
    fields = raw[raw.rfind(")") + 2:].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def become_subreaper() -> bool:
    """Make this process adopt every process orphaned below it (its parent ended: a daemon's double fork),
    instead of init: whatever this process's descendants start stays in its tree. True where it took."""
    if not supported():
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def is_subreaper() -> bool:
    """Whether this process adopts what is orphaned below it (become_subreaper)."""
    if not supported():
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[Proc]:
    """The processes whose parent is `pid`: from each of its threads' `children` file, or, where the kernel
    has none (CONFIG_PROC_CHILDREN off), from every process's parent."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    try:
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    found += [int(word) for word in f.read().split()]
            except FileNotFoundError:
                if not os.path.exists(f"/proc/{pid}/task/{task}"):
                    continue   # a thread that ended since the listing
                raise
    except FileNotFoundError:
        found = [p.pid for p in _every_process() if p.ppid == pid]
    procs = [read(child) for child in dict.fromkeys(found)]
    return [p for p in procs if p is not None and p.ppid == pid]


def _every_process() -> list[Proc]:
    procs = (read(int(name)) for name in os.listdir("/proc") if name.isdigit())
    return [p for p in procs if p is not None]


def descendants(pid: int) -> list[Proc]:
    """Every process below `pid`, parents before their children."""
    out, queue = [], [pid]
    while queue:
        for child in children(queue.pop(0)):
            out.append(child)
            queue.append(child.pid)
    return out


def torchs_own(procs) -> set[int]:
    """The pids among `procs` (Procs) that torch started for itself: those whose command line names one of
    TORCH_PROCESSES, and every process below one of them (parents followed within `procs`)."""
    procs = list(procs)
    by_pid = {p.pid: p for p in procs}
    marked = {p.pid for p in procs if any(mark in p.command(400) for mark in TORCH_PROCESSES)}

    def below_torch(p: Proc | None) -> bool:
        seen = set()
        while p is not None and p.pid not in seen:
            if p.pid in marked:
                return True
            seen.add(p.pid)
            p = by_pid.get(p.ppid)
        return False

    return {p.pid for p in procs if below_torch(p)}


def adopted(exclude: set[int] = frozenset()) -> list[Proc]:
    """This process's children in another session than its own, but for `exclude`: processes it adopted as a
    subreaper from a tree that began in another session (a worker's, a notebook kernel's), or started in a
    session of their own, never children it started itself in its session."""
    own = os.getsid(0)
    return [p for p in children(os.getpid()) if p.sid != own and p.pid not in exclude]


def end_tree(root: int, include_root: bool = True, started: int | None = None) -> list[str]:
    """End `root`'s tree (without `root` itself unless `include_root`): every process in it stopped first, round
    after round until a round finds none it had not stopped, then killed; this process's own children among
    them reaped. Returns the processes ended that were alive (not zombies) and not torch's own (`torchs_own`:
    ended quietly), described as they were before (`Proc.describe`), the root first where included.

    `started`: the root's start time (Proc.started), for a root that is not this process's child: once another
    process has reaped it, its number may be given to a new process of anyone's, which must be left alone (on a
    busy machine a verifier's number was given again within seconds, and the new process was killed)."""
    if not supported():
        return []
    if started is not None:
        now = read(root)
        if now is None or now.started != started:
            return []   # ended and reaped: what it left below it went to the subreaper above it
    stopped: dict[int, Proc] = {}
    described: dict[int, str] = {}
    for _ in range(STOP_ROUNDS):
        found = descendants(root)
        top = read(root) if include_root else None
        if top is not None:
            found.insert(0, top)
        new = [p for p in found if p.pid not in stopped]
        if not new:
            break
        for p in new:
            stopped[p.pid] = p
            if p.alive:
                described[p.pid] = p.describe()   # before the kill, while its command line can still be read
                _signal(p, signal.SIGSTOP)
    torchs = torchs_own(stopped.values())
    for p in stopped.values():
        _signal(p, signal.SIGKILL)
    _reap(stopped)
    return [line for pid, line in described.items() if pid not in torchs]


def end_all(procs: list[Proc]) -> list[str]:
    """Each of `procs` ended with its tree (end_tree); the processes ended, described."""
    out = []
    for p in procs:
        out += end_tree(p.pid)
    return out


def _signal(p: Proc, sig: int) -> None:
    now = read(p.pid)
    if now is None or now.started != p.started:
        return   # gone, and its number perhaps given to another process since
    try:
        os.kill(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(procs: dict[int, Proc], wait_s: float = 2.0) -> None:
    """Collect the exit of those of `procs` that are this process's children (a subreaper's adopted ones
    included), waiting up to `wait_s` for the kill to land."""
    mine = {pid for pid, p in procs.items() if p.ppid == os.getpid() or _parent(pid) == os.getpid()}
    deadline = time.monotonic() + wait_s
    while mine and time.monotonic() < deadline:
        for pid in list(mine):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid   # not ours, or collected elsewhere
            if done:
                mine.discard(pid)
        if mine:
            time.sleep(0.01)


def _parent(pid: int) -> int | None:
    p = read(pid)
    return p.ppid if p is not None else None
