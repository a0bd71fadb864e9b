"""The verifier's side of the worker: start it, talk to it with time limits, stand in for its functions.

A `RemoteFunction` is the seam (grader.calls.seam) for a learner's function that runs in the
worker: a call runs there, on the same tensors (shared through CUDA IPC on a GPU, shared memory on a
CPU, not copied), and the worker's facts come back to be judged here by the same rules as a call in
this process. What only a separate process adds is enforced here too: a worker that died or broke
its GPU context -> `crashed`; one that did not answer in time -> `timed-out`; bytes in the connection
that are not a reply -> `tampered`.
"""

from __future__ import annotations

import io
import os
import pickle
import signal
import tempfile
import threading
import time

from .. import config, processes
from ..cuda import sharing
from ..errors import CheckFailed, CheckTimedOut, WorkerCrashed, from_dict
from ..calls.messages import (EMPTY_BATCH, REPLIES, Batch, Batched, Bind, Bound, Call, Called, Describe, Described, Failed,
                              Load, Loaded, Prepare, Quit, extends)
from ..calls.seam import NOW, LearnerFunction
from ..calls.trusted import Overhead, clean_request_ms, own_copy_ms
from . import hung


class WorkerHandle:
    """One worker process and its log.

    `method`: how it starts. "spawn" (a fresh interpreter, the default) works from any process.
    "fork" copies this process and saves the worker importing torch again, but is right only in a
    process that has run no learner code and not touched CUDA (a forked child cannot use a GPU its
    parent initialised): the verifier, which forks its worker first thing (grader.isolation.isolate).
    A spawned worker is started before this process imports torch, so that the two import it at the
    same time."""

    def __init__(self, method: str = "spawn", private: tuple = ()):
        """`private`: connections of this process that a forked worker must not keep (the verdict's)."""
        import multiprocessing as mp

        from . import worker

        ctx = mp.get_context(method)
        fd, self.log_path = tempfile.mkstemp(prefix="ladder-worker-", suffix=".log")
        os.close(fd)
        self.conn, child = ctx.Pipe()
        # A forked worker holds copies of this process's connections: it closes this end of its own
        # pipe and the private ones before it runs anything, so that the learner's code can neither
        # answer for the grader nor send a verdict.
        inherited = (self.conn, *private) if method == "fork" else ()
        self.proc = ctx.Process(target=worker.main, args=(child, self.log_path, inherited), daemon=True)
        self.proc.start()
        child.close()
        import torch.multiprocessing  # noqa: F401 - tensor reductions for the connection
        self.called: set[str] = set()
        self.dead: str | None = None
        self.clean_ms = 0.0   # an empty request before any learner code ran (grader.calls.trusted)
        self.started = False
        self.cells: list[tuple[str, str]] = []   # the learner's cells the worker ran, in order
        self.outcomes: dict = {}                 # how those of them that did not run as they read ended
        self.problems: list[str] = []            # what running them reported
        self.ended: list[str] = []               # processes below the worker ended with it (grader.processes)

    def log_tail(self, limit: int = 1500) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
        except OSError:
            return ""
        return text if len(text) <= limit else "[...]\n" + text[-limit:]

    def request(self, msg, timeout: float, what: str):
        if self.dead:
            raise WorkerCrashed(f"{what}: not run, because {self.dead}")
        if self.conn.poll(0):   # the worker's loop answers only when asked: these bytes came from elsewhere
            self._forged(what, "before the grader asked for anything")
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            self._died(what)
        deadline = time.monotonic() + timeout
        while True:
            if self.conn.poll(min(0.2, max(0.0, deadline - time.monotonic()))):
                reply = self._receive(deadline, what)
                break
            if not self.proc.is_alive():
                self._died(what)
            if time.monotonic() >= deadline:
                self.kill()
                self.dead = f"an earlier call timed out after {timeout:.0f} s"
                raise CheckTimedOut(
                    f"{what}: timed out after {timeout:.0f} s. The process running your code was stopped, which "
                    "frees the GPU. Look for a loop that never ends (a kernel loop bound that is never reached, "
                    "a `while` waiting on something) or a launch far larger than intended.")
        if isinstance(reply, Failed):
            exc = from_dict({"cls": reply.cls, "reason": reply.reason, "message": reply.message})
            if reply.crashed:
                self.dead = "your code broke the GPU context of the process running it"
                exc.args = (f"{what}: {exc.args[0]}\n{_crash_hint()}" + self._log_note(),)
            raise exc
        if not isinstance(reply, REPLIES.get(type(msg), object)):
            self._forged(what, f"a {type(reply).__name__} where the answer to {type(msg).__name__} belongs")
        return reply

    def _forged(self, what: str, how: str):
        self.kill()
        self.dead = "the connection to the process running your code was written to by your code"
        raise CheckFailed(f"{what}: the grader's connection to the process running your code carried a reply it "
                          f"did not send ({how}): something in your code wrote into the grader's connection.",
                          reason="tampered")

    def _receive(self, deadline: float, what: str):
        """One reply, read on a helper thread (a garbled length must not block this process) and
        unpickled with `safe_loads`, so bytes the learner's code wrote into the connection can neither
        hang the verifier nor run code in it."""
        box: dict = {}

        def read():
            try:
                box["data"] = self.conn.recv_bytes(config.MAX_REPLY_BYTES)
            except BaseException as exc:  # noqa: BLE001 - reported below
                box["error"] = exc

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(max(1.0, deadline - time.monotonic()))
        if reader.is_alive() or "error" in box:
            if isinstance(box.get("error"), EOFError) or not self.proc.is_alive():
                self._died(what)
            self.kill()
            self.dead = "the connection to the process running your code was corrupted"
            raise CheckFailed(f"{what}: the process running your code sent the grader data it cannot read: something "
                              "in your code wrote into the grader's connection.", reason="tampered")
        try:
            return safe_loads(box["data"])
        except Exception as exc:
            self.kill()
            self.dead = "the connection to the process running your code was corrupted"
            raise CheckFailed(f"{what}: the process running your code sent the grader data it will not read "
                              f"({type(exc).__name__}: {exc}): something in your code wrote into the grader's "
                              "connection.", reason="tampered") from None

    def _log_note(self) -> str:
        tail = self.log_tail()
        return f"\n\noutput of the process running your code:\n{tail}" if tail else ""

    def _died(self, what: str):
        self.proc.join(timeout=5)
        code = self.proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        self.dead = f"the process running your code died ({how})"
        raise WorkerCrashed(f"{what}: the process running your code died ({how}).\n{_crash_hint()}"
                            + self._log_note())

    def load(self, cells, outcomes) -> Loaded:
        """Start a check: the first time, prepare the worker and time empty requests on it while no learner code
        has run (the reference that caps what a timed batch's overhead may be credited: grader.calls.trusted);
        then run the cells the worker has not run yet. A session's worker (grader.isolation.verifier.serve)
        ran an earlier check's cells already: `cells` must start with them, ended as they did."""
        outcomes = dict(outcomes or {})
        if not self.started:
            self.request(Prepare(), config.first_call_timeout_s(), "starting the process that runs your code")
            samples = []
            for _ in range(CLEAN_SAMPLES):
                t0 = NOW()
                self.request(Batch(EMPTY_BATCH, 0, on_device=False), 60, "starting the process that runs your code")
                samples.append((NOW() - t0) * 1e3)
            self.clean_ms = clean_request_ms(samples)
            self.started = True
        if not extends(cells, outcomes, self.cells, self.outcomes):
            raise RuntimeError("the session's worker ran other cells than the check's: the asking process should "
                               "have started a new session (grader.isolation.isolate.CheckSession.fits)")
        new = [tuple(c) for c in cells[len(self.cells):]]
        new_outcomes = {name: outcomes[name] for name, _ in new if name in outcomes}
        self.called = set()   # each check's first call of a function may compile and autotune: the longer limit
        reply = self.request(Load(new, new_outcomes), config.first_call_timeout_s(),
                             "running your notebook's cells")
        self.cells += new
        self.outcomes.update(new_outcomes)
        self.problems += reply.problems
        return Loaded(list(self.problems), reply.tampered)

    def describe(self, names: list[str]) -> Described:
        return self.request(Describe(names), 60, "looking up your names")

    def kill(self):
        """Stop the worker and everything below it: the worker is stopped first, so that it starts nothing more,
        then its tree is ended (grader.processes; the worker adopts what is orphaned below it), then the worker.
        What it started after all lands in this verifier, which ends it as the check ends."""
        if self.proc.is_alive():
            try:
                os.kill(self.proc.pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            self.ended += processes.end_tree(self.proc.pid, include_root=False)
            self.proc.kill()
        self.proc.join(timeout=10)

    def close(self):
        if self.proc.is_alive() and not self.dead:
            try:
                self.conn.send(Quit())
                if self.conn.poll(5):
                    self.conn.recv()
            except Exception:
                pass
        self.kill()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


# What a worker's reply may contain: the messages, plain data, tensors shared through
# torch.multiprocessing, NumPy arrays. Anything else in the pickle (a function to call while loading,
# say) is refused.
_MESSAGES = {("grader.calls.messages", n) for n in (
    "Facts", "BatchFacts", "RecordedKernel", "CallPolicy", "Prepared", "Loaded", "Described", "Called", "Bound",
    "Batched", "Failed")} | {("grader.cuda.tally", "Tally"), ("grader.cuda.trace", "DeviceTrace"), ("grader.cuda.trace", "DeviceOp")}
_SAFE_GLOBALS = _MESSAGES | {
    ("builtins", n) for n in ("list", "tuple", "dict", "set", "frozenset", "int", "float", "complex", "str", "bytes",
                              "bytearray", "bool", "slice", "range")
} | {
    ("collections", "OrderedDict"), ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"),
    ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor"), ("torch", "device"), ("torch", "Size"),
    ("torch", "Tensor"), ("torch.storage", "UntypedStorage"), ("torch.storage", "TypedStorage"), ("torch", "UntypedStorage"),
    ("multiprocessing.resource_sharer", "DupFd"), ("multiprocessing.reduction", "DupFd"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
} | {
    ("torch.multiprocessing.reductions", n) for n in (
        "rebuild_cuda_tensor", "rebuild_tensor", "rebuild_storage_fd", "rebuild_storage_filename", "rebuild_typed_storage",
        "rebuild_typed_storage_child", "rebuild_storage_empty", "rebuild_event")
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        import numpy as np
        import torch

        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if module.startswith("numpy") and name.endswith("DType") and hasattr(np.dtypes, name):
            return getattr(np.dtypes, name)
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def safe_loads(data: bytes):
    return _SafeUnpickler(io.BytesIO(data)).load()


CLEAN_SAMPLES = 6   # empty requests timed before the learner's cells load: one to warm up, five kept


def _crash_hint() -> str:
    return ("Most often an index past the end of an array (an illegal memory access). Only this check failed; "
            "the others run in fresh processes. `ladder check --sanitize` names the kernel and line.")


class RemoteFunction(LearnerFunction):
    """The seam for the learner's function `name`, defined in the worker."""

    timed_where = ("from the grader's own process, which runs none of your code: its clock around each batch, less "
                   "the same request with no calls (the events recorded where your code runs must agree)")

    def __init__(self, handle: WorkerHandle, name: str, trailing: tuple = ()):
        super().__init__(name, trailing)
        self.handle = handle

    def __repr__(self) -> str:
        return f"<your {self.name}, running in a separate process>"

    @property
    def process_id(self) -> int:
        return self.handle.proc.pid

    def _twin(self, trailing: tuple) -> "RemoteFunction":
        return RemoteFunction(self.handle, self.name, trailing)

    def _timeout(self) -> float:
        return config.call_timeout_s() if self.name in self.handle.called else config.first_call_timeout_s()

    def _ask(self, msg, timeout: float, what: str):
        """The worker's reply to `msg`; at once a time-out where this function hung earlier in the notebook's
        run, and that run told of a time-out here (grader.isolation.hung)."""
        hung.refuse_if_hung(self.name, what)
        try:
            return self.handle.request(msg, timeout, what)
        except CheckTimedOut:
            if not sharing.shared():   # beside other checks a neighbour may have slowed it: checked again alone
                hung.note_hung(self.name)
            raise

    def _run(self, args, kwargs, policy):
        reply: Called = self._ask(Call(self.name, args, kwargs, policy), self._timeout(), f"`{self.name}`")
        self.handle.called.add(self.name)
        return reply.result, reply.facts

    def _bind(self, argsets):
        reply: Bound = self._ask(Bind(self.name, argsets, {}), config.call_timeout_s(), f"`{self.name}`")
        return reply.bid

    def _overhead(self, argsets) -> Overhead:
        """On a GPU the worker copies every tensor's storage into memory of its own before a batch and back
        after it (grader.isolation.worker): what those copies cost at this process's own copy rate."""
        import torch

        storages = {}
        for args in argsets:
            for a in args:
                if isinstance(a, torch.Tensor) and a.is_cuda:
                    storages[a.untyped_storage().data_ptr()] = a.untyped_storage().nbytes()
        return Overhead(clean_ms=self.handle.clean_ms, copy_ms=own_copy_ms(2 * sum(storages.values())))

    def _timed(self, bid, reps, traced=False):
        reply: Batched = self._ask(Batch(bid, reps, traced), config.call_timeout_s() + reps * 0.5,
                                   f"`{self.name}` (timed runs)")
        return reply.facts
