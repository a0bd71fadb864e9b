"""Notebook kernels forked from a process that imported torch once: `python -m grader.notebooks.warm_kernels FD`.

A notebook's kernel started the usual way (a fresh `python -m ipykernel_launcher`) spends about three seconds of
CPU before the notebook's first cell does any work: the interpreter, ipykernel, then torch, which every chapter's
setup cell imports. `ladder check` starts a kernel for every notebook, `ladder grade` one for every student's
notebook and another after each kernel a cell takes down. This server imports them once, for the life of the
process that runs notebooks, and forks a kernel for each request, in the asking process's environment, folder
and standard streams, with the import path a fresh `python -m ipykernel_launcher` would have there.

The kernel is the asking process's own child, as one jupyter_client starts is: the server forks a child that
forks the kernel and exits, and the orphaned kernel is adopted by the nearest subreaper above it, the asking
process (grader.notebooks.nbexec makes it one before its first kernel; where it is not one, kernels are started
the usual way). So the asking process collects the kernel's exit status (how a kernel died), signals its process
group, and adopts what a learner's code leaves behind exactly as with a kernel it started itself.

The server never runs a notebook's code and never touches CUDA (a process forked from one that did cannot use
the GPU), so every kernel starts from the same clean state. Where the asking process's environment changes in a
way that decides what an import finds (PYTHONPATH, say), the server is started again with the new one.

Written here because jupyter_client starts a kernel only from a command (its provisioners are the place to
change that, and `WarmProvisioner` is one), and multiprocessing's fork server runs the asking process's main
module in every child. The protocol is the verifiers' fork server's (grader.isolation.server): pickled,
length-prefixed requests over a socket pair, with the asking process's standard streams passed as descriptors.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from queue import Empty

from jupyter_client import AsyncKernelClient, AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import DottedObjectName, Type

from .. import processes
from ..isolation.server import Started, freeze_heap, import_first_call_imports, receive, send

# What a kernel imports before its first cell (ipykernel, its debugger, IPython) and what every chapter's setup cell
# imports first (torch); none of them starts a thread or touches CUDA on import.
PRELOAD = ("torch", "numpy", "IPython", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell",
           "ipykernel.debugger")
LAUNCHER = "ipykernel_launcher"
# How long the kernel may take to be adopted and say so, before its start counts as failed (a few ms when idle).
ADOPTION_S = 20.0


def _decides_imports(name: str) -> bool:
    """Environment variables that decide the interpreter's flags, what the server's imports found or how they set
    themselves up: a kernel asked for with other values than the server started with gets a server started with
    them."""
    return name.startswith(("PYTHON", "TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "LD_", "PYDEVD_"))


def signature(environ: dict) -> dict:
    return {k: v for k, v in environ.items() if _decides_imports(k)}


@dataclass
class Launch:
    """Fork a kernel that runs `argv` (ipykernel_launcher's arguments) in `cwd` with `environ`, as a child of `parent`
    (the asking process, a subreaper). The asking process's stdin, stdout and stderr come with the request."""
    argv: list
    environ: dict
    cwd: str
    parent: int


# -- the server ------------------------------------------------------------------------------------------------


def _pythonpath(environ: dict, cwd: str) -> list[str]:
    """PYTHONPATH's entries as Python puts them on the import path (an empty one is the folder it starts in)."""
    value = environ.get("PYTHONPATH", "")
    return [entry or cwd for entry in value.split(os.pathsep)] if value else []


def _base_path() -> list[str]:
    """The import path a `python -m` process gets from its installation (the standard library, site-packages, .pth
    entries): the server's own, without the folder it started in and PYTHONPATH's entries, which come first."""
    first = 0 if sys.flags.safe_path else 1
    return sys.path[first + len(_pythonpath(os.environ, os.getcwd())):]


def _kernel_path(launch: Launch, base: list[str]) -> list[str]:
    """What `python -m ipykernel_launcher` started in the kernel's folder, with its environment, begins with."""
    first = [] if sys.flags.safe_path else [launch.cwd]
    return first + _pythonpath(launch.environ, launch.cwd) + base


def _serve(sock: socket.socket) -> Launch | None:
    """Answer requests until the asking process goes (None), or, in a forked kernel, return its request."""
    while True:
        try:
            request, fds = _receive_with_fds(sock)
        except (EOFError, ConnectionError):
            return None
        ready_r, ready_w = os.pipe()
        middle = os.fork()
        if middle == 0:   # the child that forks the kernel and exits, so that the kernel is adopted
            kernel = -1
            try:
                os.close(ready_r)
                kernel = os.fork()
            finally:
                if kernel != 0:   # this child, whatever happened: never back into the server's loop
                    if kernel > 0:
                        os.write(ready_w, kernel.to_bytes(4, "little"))
                    os._exit(0 if kernel > 0 else 1)
            sock.close()
            return _adopted(request, fds, middle_pid=os.getppid(), ready=ready_w)
        os.close(ready_w)
        for fd in fds:
            os.close(fd)
        os.waitpid(middle, 0)
        pid, error = _adoption(ready_r)
        os.close(ready_r)
        send(sock, (pid, error))


def _adoption(ready_r: int) -> tuple[int | None, str | None]:
    """The kernel's pid and None once it says it was adopted, or (pid, why) where it was not."""
    data = b""
    deadline = time.monotonic() + ADOPTION_S
    while len(data) < 5 and time.monotonic() < deadline:
        readable, _, _ = select.select([ready_r], [], [], max(0.0, deadline - time.monotonic()))
        if not readable:
            break
        chunk = os.read(ready_r, 5 - len(data))
        if not chunk:
            break
        data += chunk
    pid = int.from_bytes(data[:4], "little") if len(data) >= 4 else None
    if len(data) == 5 and data[4:] == b"+":
        return pid, None
    return pid, "the forked kernel was not adopted by the process that asked for it (is it a subreaper?)"


def _receive_with_fds(sock: socket.socket):
    request, fd = receive(sock, with_fd=True)
    fds = [fd] if fd is not None else []
    # The three streams come as three messages' descriptors: stdin with the request, then stdout and stderr.
    for _ in range(2):
        _, more = receive(sock, with_fd=True)
        fds.append(more)
    return request, fds


def _adopted(request: Launch, fds: list[int], middle_pid: int, ready: int) -> Launch:
    """In the kernel: wait until the middle child's exit has made the asking process its parent, say so, and take
    on the asking process's streams, folder and environment."""
    deadline = time.monotonic() + ADOPTION_S
    while os.getppid() == middle_pid and time.monotonic() < deadline:
        time.sleep(0.0005)
    adopted = os.getppid() == request.parent
    if adopted:
        # As jupyter_client starts a kernel: a session and process group of its own, before the asking process
        # learns the pid and signals that group.
        os.setsid()
    os.write(ready, b"+" if adopted else b"-")
    os.close(ready)
    if not adopted:
        os._exit(1)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.environ)
    return request


def _run_kernel(request: Launch, base: list[str]) -> None:
    """Become the kernel: ipykernel_launcher as `__main__`, its exit this process's exit, as under `python -m`, but
    for the interpreter's teardown of its modules. Why: a kernel that imported torch spends about a second of CPU
    tearing torch's modules down after its shutdown reply (0.2 s without torch), a second the notebook's run waits
    for; the exit does everything else an interpreter's exit does, in its order: the threads still running are
    waited for, the atexit functions run (a learner's among them), and every open file's buffer is written."""
    import atexit
    import runpy
    import traceback

    sys.path[:] = _kernel_path(request, base)
    sys.argv = [LAUNCHER] + list(request.argv)
    code = 0
    try:
        runpy.run_module(LAUNCHER, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:   # as the interpreter reports an uncaught exception: its traceback, status 1
        traceback.print_exc()
        code = 1
    try:
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        _end_control_thread()
        atexit._run_exitfuncs()
    finally:
        _flush_open_files()
        os._exit(code)


def _open_files() -> list:
    """The file objects the cyclic collector tracks (all but those the server froze, freeze_heap)."""
    import gc
    import io

    return [obj for obj in gc.get_objects() if isinstance(obj, (io.BufferedIOBase, io.TextIOBase))]


# The file objects that existed before the server froze its heap, which gc.get_objects no longer lists: the kernel
# flushes them at its exit as well as those opened later.
_PRELOADED_FILES: list = []


def _end_control_thread() -> None:
    """End ipykernel's control thread before the exit functions run, while IOPub still carries what it sends. Why:
    ipykernel's own exit function (IPKernelApp.close) stops the IOPub thread first and then waits for the control
    thread, which may still be finishing the shutdown request it answered: its last flush then waits for an IOPub
    that is gone, for ipykernel's flush timeout, and the kernel is killed before it exits. A started kernel rarely
    meets it (its exit spends a tenth of a second collecting torch's objects first); a forked one, whose heap is
    frozen, met it once in eight shutdowns."""
    try:
        from ipykernel.kernelapp import IPKernelApp

        thread = IPKernelApp.instance().control_thread if IPKernelApp.initialized() else None
    except Exception:   # another ipykernel: its exit is left as it is
        return
    if thread is not None and thread.is_alive():
        thread.stop()
        thread.join(timeout=5)


def _flush_open_files() -> None:
    """Write out what every file object still open holds in its buffer, as the interpreter's teardown does when it
    closes them: a learner's cell that wrote to a file it never closed finds the whole file after `ladder check`."""
    preloaded = [ref() for ref in _PRELOADED_FILES]
    for obj in _open_files() + [f for f in preloaded if f is not None]:
        try:
            if not obj.closed:
                obj.flush()
        except Exception:   # a stream that cannot be written any more: nothing is left to write
            pass


def _exit_code(exc: SystemExit) -> int:
    """The status an interpreter exits with for this SystemExit (its message printed, as the interpreter does)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    base = _base_path()
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:   # an optional part (ipykernel's debugger needs debugpy): the kernel imports it, or not
            pass
    import_first_call_imports()
    _PRELOADED_FILES.extend(weakref.ref(f) for f in _open_files())
    freeze_heap()
    send(sock, "ready")
    request = _serve(sock)
    if request is None:
        # The asking process is gone (its kernels are its own children, and end with it). Out without the
        # interpreter's teardown of torch's modules, about a second of CPU that nothing waits for.
        os._exit(0)
    _run_kernel(request, base)


# -- the asking side -------------------------------------------------------------------------------------------


class ForkedKernel:
    """A kernel the server forked, held as subprocess.Popen holds a kernel it started: the same methods, the same
    answers (a negative status for a signal; 0 where the status was collected elsewhere, as Popen says)."""

    def __init__(self, pid: int, stdin: int):
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None
        self._stdin_w = stdin   # the writing end of the kernel's stdin, held open as Popen's PIPE is

    def _collected(self, status: int) -> int:
        self.returncode = os.waitstatus_to_exitcode(status)
        self._close()
        return self.returncode

    def _close(self) -> None:
        if self._stdin_w is not None:
            os.close(self._stdin_w)
            self._stdin_w = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0
                self._close()
            else:
                if pid == self.pid:
                    self._collected(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Server(Started):
    """This process's handle on its kernel server, started on the first kernel asked for in an environment, kept
    for the process's life and ended at its exit; started again if it died or the environment changed."""

    def __init__(self, environ: dict, options: list[str]):
        # The kernels' own environment and interpreter options, so that the flags an interpreter takes from them at
        # start (sys.flags) are the kernels'; started in the grader's folder, never a notebook's, whose `torch.py`
        # it would import.
        self.key = (tuple(options), signature(environ))
        super().__init__(__name__, dict(environ), cwd=str(Path(__file__).resolve().parents[2]), options=tuple(options))

    def launch(self, launch: Launch) -> ForkedKernel:
        # As jupyter_client's launcher: stdin a pipe this side holds, stdout and stderr this process's own
        # descriptors 1 and 2 (not sys.stdout, which pytest or Dask may have replaced), or nowhere where it has none.
        stdin_r, stdin_w = os.pipe()
        opened = [fd if _fd_ok(fd) else os.open(os.devnull, os.O_WRONLY) for fd in (1, 2)]
        try:
            send(self.sock, launch, (stdin_r,))
            for fd in opened:
                send(self.sock, None, (fd,))
            pid, error = receive(self.sock)
        finally:
            os.close(stdin_r)
            for fd in opened:
                if fd not in (1, 2):
                    os.close(fd)
        if error is not None:
            os.close(stdin_w)
            raise RuntimeError(error)
        return ForkedKernel(pid, stdin_w)


def _fd_ok(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


_SERVER: _Server | None = None
_LOCK = threading.Lock()


def server_pid() -> int | None:
    """The kernel server's pid, where one runs: a child of this process in a session of its own that is the grader's,
    not a learner's (grader.notebooks.nbexec ends those)."""
    return _SERVER.proc.pid if _SERVER is not None and _SERVER.alive() else None


def _split(cmd: list[str]) -> tuple[list[str], list[str]] | None:
    """(the interpreter's options, the launcher's arguments) of `PYTHON [OPTIONS] -m ipykernel_launcher ARGS`, or
    None for another command (kernel specs add options such as `-Xfrozen_modules=off`)."""
    for i in range(1, len(cmd) - 1):
        if cmd[i:i + 2] == ["-m", LAUNCHER]:
            options = cmd[1:i]
            return (options, cmd[i + 2:]) if all(o.startswith("-") for o in options) else None
    return None


def fits(cmd: list[str]) -> bool:
    """Whether a kernel of this command can be forked here: ipykernel's launcher under this interpreter, on Linux,
    asked for by a subreaper (which adopts it)."""
    if not cmd or _split(cmd) is None or not processes.supported() or not processes.is_subreaper():
        return False
    try:
        return os.path.samefile(cmd[0], sys.executable)
    except OSError:
        return False


def launch(cmd: list[str], environ: dict, cwd: str) -> ForkedKernel:
    """Fork a kernel for `cmd` (one that `fits`) from this process's kernel server."""
    global _SERVER
    options, argv = _split(cmd)
    wanted = (tuple(options), signature(environ))
    with _LOCK:
        if _SERVER is not None and (not _SERVER.alive() or _SERVER.key != wanted):
            _SERVER.close()
            _SERVER = None
        if _SERVER is None:
            _SERVER = _Server(environ, options)
        return _SERVER.launch(Launch(argv, dict(environ), str(cwd), os.getpid()))


# -- the jupyter_client side --------------------------------------------------------------------------------------


class WarmProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, but a kernel that `fits` is forked from the kernel server; any other (or one
    the server could not start) is started as the local provisioner starts it."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        streams_given = any(kwargs.get(name) is not None for name in ("stdin", "stdout", "stderr"))
        if streams_given or kwargs.get("independent") or not fits(cmd):
            return await super().launch_kernel(cmd, **kwargs)
        env = dict(kwargs.get("env") or os.environ)
        env["JPY_PARENT_PID"] = str(os.getpid())   # as jupyter_client's launcher: the kernel ends if this process does
        cwd = str(kwargs.get("cwd") or os.getcwd())
        try:
            self.process = launch(cmd, env, cwd)
        except (OSError, RuntimeError, EOFError) as exc:
            self.log.warning("a kernel could not be forked (%s): starting one the usual way", exc)
            return await super().launch_kernel(cmd, **kwargs)
        self.pid = self.process.pid
        self.pgid = os.getpgid(self.pid)
        self.cwd = cwd
        return self.connection_info


class PromptKernelClient(AsyncKernelClient):
    """jupyter_client's asynchronous client, but ready as soon as the kernel is: when the kernel has answered a
    kernel_info request and IOPub has carried that request's idle status. Why: jupyter_client's own wait ends with
    0.2 s in which IOPub must stay quiet, paid at every kernel start, although a kernel's startup messages all come
    before the idle status of the first request it answers; the messages that are left are read here, as there."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            request = self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply" and await self._idle_after(request):
                self._handle_kernel_info_reply(reply)
                break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")
        while True:   # what IOPub still holds, read now that nothing more can come before the first cell
            try:
                await self.iopub_channel.get_msg(timeout=0)
            except Empty:
                break

    async def _idle_after(self, request: str) -> bool:
        """Whether IOPub carries the idle status of `request`. False where IOPub may not have been connected when the
        kernel said it, and the kernel is to be asked again: at the kernel's welcome on IOPub (ipykernel sends it when
        this client's subscription reaches it), or after 0.2 s without a message, as jupyter_client's wait."""
        while True:
            try:
                msg = await self.iopub_channel.get_msg(timeout=0.2)
            except Empty:
                return False
            if msg["msg_type"] == "iopub_welcome":
                return False
            if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == request):
                return True


class WarmKernelManager(AsyncKernelManager):
    """The kernel manager of the notebooks the grader runs (grader.notebooks.nbexec): its kernels come from
    `WarmProvisioner`, unless the kernel's spec names a provisioner of its own, and its clients are
    `PromptKernelClient`s."""

    client_class = DottedObjectName(f"{__name__}.PromptKernelClient", config=True)
    client_factory = Type(PromptKernelClient, klass=AsyncKernelClient, config=True)

    async def _async_finish_shutdown(self, waittime=None, pollinterval=0.1, restart=False):
        # A kernel that exits on its shutdown request does so within tens of milliseconds (_run_kernel): looked for
        # every 10 ms, not jupyter_client's 100.
        await super()._async_finish_shutdown(waittime, min(pollinterval, 0.01), restart)

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None and not self.kernel_spec.metadata.get("kernel_provisioner"):
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = WarmProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        return await super()._async_pre_start_kernel(**kw)


if __name__ == "__main__":
    main()
