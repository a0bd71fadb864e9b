"""The process verifiers are forked from: `python -m grader.isolation.server SOCKET_FD`.

Every graded check runs in a verifier (grader.isolation.verifier), and a fresh interpreter spends two to
three seconds importing torch before it can check anything. This server imports torch
and the verifier once, for the life of the process that grades (`ladder grade`, `ladder check`), and
forks a verifier for each session (grader.isolation.isolate.CheckSession), which checks a notebook run's cells in
turn, or one check of no run: milliseconds. It never runs a check, the learner's code or
anything that touches CUDA (a forked child cannot use a GPU its parent initialised), so every verifier
starts from the same clean state.

Written here rather than taken from `multiprocessing`'s fork server, which re-runs the asking
process's main module in every child: a script fed on stdin cannot be re-run at all, and a Jupyter
kernel's or a console script's main costs time in every check.

The protocol, over a Unix socket pair whose other end the asking process holds (grader.isolation.
isolate): a request is a pickled `Fork` (length-prefixed); the reply is the child's pid, with the
asking end of a socket pair whose other end the child holds, passed as a file descriptor: the child
reads each check from it and writes each verdict there. The server keeps no copy of
either end. A socket, not a pipe: another process of the same user can open a pipe through
/proc/PID/fd, never a socket. A `Status` request returns how a child ended, once it has.

The server is the subreaper of everything below it (grader.processes): a process a learner's code started that
outlived its verifier (a verifier killed at a time limit leaves its worker's tree to the server) becomes the
server's child, and the server's only children of its own are the verifiers it forked. So whenever a verifier
ends, every other child of the server is ended with its tree; and when the server itself ends, everything below
it is ended.
"""

from __future__ import annotations

import atexit
import os
import pickle
import shutil
import signal
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass

from .. import processes, sockets

VERIFIER = "grader.isolation.verifier"
PRELOAD = ("torch", "numpy", VERIFIER)


@dataclass
class Fork:
    """Fork a session's verifier (grader.isolation.verifier.serve), in the asking process's environment and folder
    as they are now."""
    environ: dict
    cwd: str | None


@dataclass
class Status:
    pid: int


def send(sock: socket.socket, obj, fds: tuple[int, ...] = ()) -> None:
    data = pickle.dumps(obj)
    message = struct.pack("!I", len(data)) + data
    if fds:
        socket.send_fds(sock, [message], list(fds))
    else:
        sock.sendall(message)


def receive(sock: socket.socket, with_fd: bool = False):
    """One message: the object, or (object, fd) with `with_fd`."""
    head, fds, _, _ = socket.recv_fds(sock, 4, 1) if with_fd else (sock.recv(4, socket.MSG_WAITALL), [], 0, None)
    if len(head) < 4:
        raise EOFError("the other end of the fork server's socket closed")
    (size,) = struct.unpack("!I", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the other end of the fork server's socket closed")
        data += chunk
    obj = pickle.loads(data)
    return (obj, fds[0] if fds else None) if with_fd else obj


class Started:
    """The asking process's handle on a fork server of its own (this one, or grader.notebooks.warm_kernels'):
    `python [OPTIONS] -m MODULE FD` in a session of its own, with the other end of a socket pair, ready once it says
    so; ended at this process's exit, or sooner by `close`."""

    def __init__(self, module: str, env: dict, cwd: str | None = None, options: tuple[str, ...] = ()):
        mine, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, *options, "-m", module, str(theirs.fileno())],
                                     pass_fds=(theirs.fileno(),), env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        theirs.close()
        self.sock = mine
        # Why: left to the interpreter's end, the server's Popen and socket were collected while it still ran, and
        # every `ladder grade` on one GPU ended with two ResourceWarnings on its stderr. Closing our end is what
        # ends the server (it returns on EOF).
        atexit.register(self.close)
        if receive(self.sock) != "ready":
            raise RuntimeError(f"{module} did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End the server: close this process's end of its socket and wait for it (kill it after 10 s)."""
        atexit.unregister(self.close)
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_ENDED: dict[int, int] = {}   # pid -> wait status, for verifiers that ended
_VERIFIERS: set[int] = set()  # verifiers forked and still running


def _reap(*_):
    ended = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        if pid in _VERIFIERS:
            _VERIFIERS.discard(pid)
            _ENDED[pid] = status
            ended = True
    if ended:
        _end_orphans()


def _end_orphans() -> None:
    """Every child of the server that is not a running verifier was orphaned below one that ended (a worker, a
    process a learner's code started): end it, with its tree."""
    processes.end_all([p for p in processes.children(os.getpid()) if p.pid not in _VERIFIERS])


def _child(sock: socket.socket, request: Fork, verdict: socket.socket) -> None:
    from multiprocessing.connection import Connection

    verifier = sys.modules[VERIFIER]  # imported by main(), before any fork: it is this server's program
    sock.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    code = 1
    try:
        verifier.serve(Connection(verdict.detach()), request.environ, request.cwd)
        code = 0
    finally:
        os._exit(code)  # never back into the server's loop


def serve(sock: socket.socket) -> None:
    processes.become_subreaper()
    signal.signal(signal.SIGCHLD, _reap)
    try:
        _serve(sock)
    finally:   # the asking process is gone or done: so is every check it asked for
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        processes.end_tree(os.getpid(), include_root=False)


def _serve(sock: socket.socket) -> None:
    while True:
        try:
            request = receive(sock)
        except (EOFError, ConnectionError):
            return  # the asking process is gone: so is the reason to exist
        if isinstance(request, Status):
            _reap()
            status = _ENDED.pop(request.pid, None)
            send(sock, None if status is None else os.waitstatus_to_exitcode(status))
            continue
        asking_end, child_end = socket.socketpair()
        # Until the new verifier is known as one, a verifier's end must not make it look orphaned (_end_orphans).
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            asking_end.close()
            _child(sock, request, child_end)
        _VERIFIERS.add(pid)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        child_end.close()
        send(sock, pid, (asking_end.fileno(),))
        asking_end.close()


def import_first_call_imports() -> None:
    """Make, before the first fork, the imports that the grader's own first calls into torch make. Why: torch's
    `assert_close` imports torch.distributed.tensor (and sympy with it) on its first call, about 0.8 s of CPU that
    every forked kernel and verifier paid again at its first correctness check; made once here, the forks share it."""
    import warnings

    import torch

    with warnings.catch_warnings():   # what these imports warn of is for a learner's code, not the server's stderr
        warnings.simplefilter("ignore")
        torch.testing.assert_close(torch.ones(2), torch.ones(2))


def freeze_heap() -> None:
    """Move every object the preloaded imports made out of the cyclic collector's reach, before the first fork.
    Why: a forked process shares the server's pages until it writes to one, and each full collection in it (IPython
    runs one when its kernel exits, a check runs one between checks) writes to every object's header. On torch's heap,
    about 260,000 objects, that costs a forked kernel 0.1 to 0.2 s of CPU a collection, and copies the pages. What
    the preloaded modules hold lives as long as the process anyway (CPython's documented use of gc.freeze)."""
    import gc

    gc.collect()
    gc.freeze()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD:
        __import__(name)
    short_folder = sockets.short_multiprocessing_folder()   # before the first fork: every verifier and worker uses it
    import_first_call_imports()
    freeze_heap()
    send(sock, "ready")
    serve(sock)
    if short_folder:
        shutil.rmtree(short_folder, ignore_errors=True)
    # Every check is over and ended (serve): out without the interpreter's teardown of torch's modules, about a
    # second of CPU, in every process that grades.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
