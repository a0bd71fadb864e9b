"""The worker: a fresh process that runs the learner's code, and decides nothing.

The verifier (grader.isolation.verifier) starts one worker per graded check, or one for a session's checks
(each check's `Load` runs only the cells it adds). The worker imports every
chapter (through the registry), notes the identities of what the learner must not replace, then runs
the learner's cells (the setup cell and the solution cells, definitions only: grader.learner.code)
and serves requests (grader.calls.messages) over a `multiprocessing` connection: call a function
on tensors the verifier shares with it, bind argument sets and run batches of timed calls. Each call
runs through grader.calls.facts, exactly as a call in the notebook's own process does, and the
facts go back to the verifier, which judges them.

Its stdout and stderr go to a log file the verifier reads, never to the notebook.
"""

from __future__ import annotations

import gc
import os
import sys

from .. import chapters, config
from ..errors import LadderError, as_dict
from ..learner.code import KernelOutcome, run_cell
from ..learner.errors import translate
from ..calls import facts as gather
from ..calls.messages import (EMPTY_BATCH, Batch, Batched, Bind, Bound, Call, Called, Describe, Described, Failed, Load,
                              Loaded, Prepare, Prepared, Quit)


class Worker:
    def __init__(self, conn, has_gpu: bool):
        import torch

        self.conn = conn
        self.has_gpu = has_gpu
        self.torch = torch
        self.ns: dict = {"__name__": "__learner__"}
        # The grader's own empty batch: what a request costs before any learner code (grader.calls.trusted).
        self.bound: dict[int, tuple] = {EMPTY_BATCH: (None, [()], {}, [])}
        self.keep: list = []   # tensors returned to the verifier stay alive until the next request
        self.prepared = False

    def prepare(self, msg: Prepare | None = None) -> Prepared:
        for module in chapters.names():   # imported, and so watched, before any learner code
            try:
                chapters.module(module)
            except Exception:
                pass
        gather.start_watching(again=True)
        self.prepared = True
        return Prepared()

    def load(self, msg: Load) -> Loaded:
        """A check starts: what an earlier check of the session left (its bound inputs and their native copies,
        its results) is let go, and the cells it adds run."""
        if not self.prepared:
            self.prepare()
        self.bound = {EMPTY_BATCH: self.bound[EMPTY_BATCH]}
        self.keep = []
        gc.collect()
        if self.has_gpu:
            self.torch.cuda.empty_cache()
        problems = []
        for name, source in msg.cells:
            problems += run_cell(name, source, self.ns, msg.outcomes.get(name, KernelOutcome()))
        return Loaded(problems, gather.tampered())

    def describe(self, msg: Describe) -> Described:
        out = {}
        for name in msg.names:
            if name not in self.ns:
                out[name] = ("missing", None)
            elif callable(self.ns[name]):
                out[name] = ("callable", None)
            else:
                value = self.ns[name]
                out[name] = ("value", value) if gather.plain(value) else ("opaque", type(value).__name__)
        return Described(out)

    def call(self, msg: Call) -> Called:
        result, facts = gather.run_call(self.ns[msg.name], msg.args, msg.kwargs, msg.policy)
        self.keep = [result]
        return Called(result, facts)

    def _native(self, t, natives: dict, pairs: list):
        """A view of `t` on memory this process allocated, same storage layout (guard bands included).

        Launching on memory mapped from the verifier (CUDA IPC) costs far more host time a launch
        than on the process's own memory, so timed batches run on native copies, refreshed from the
        verifier's tensors before each batch and copied back after it. Tensors that share a storage
        (chapter 6b's dq, dk, dv and chapter 7's outputs are slices of one stacked tensor) share one
        copy: a copy each would be copied back in turn, each undoing what the others' kernels wrote.
        """
        torch = self.torch
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key not in natives:
            natives[key] = torch.empty(storage.nbytes(), dtype=torch.uint8, device=t.device)
            pairs.append((torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage), natives[key]))
        return torch.empty(0, dtype=t.dtype, device=t.device).set_(natives[key].untyped_storage(), t.storage_offset(),
                                                                  t.size(), t.stride())

    def bind(self, msg: Bind) -> Bound:
        bid = len(self.bound) + 1
        pairs, native_sets, natives = [], [], {}
        for args in msg.argsets:
            native_sets.append(tuple(self._native(a, natives, pairs)
                                     if isinstance(a, self.torch.Tensor) and self.has_gpu else a for a in args))
        self.bound[bid] = (self.ns[msg.name], native_sets, msg.kwargs, pairs)
        return Bound(bid)

    def batch(self, msg: Batch) -> Batched:
        from torch.autograd.graph import increment_version

        fn, argsets, kwargs, pairs = self.bound[msg.bid]
        for theirs, mine in pairs:  # the verifier's current inputs, poisoned outputs and guard bands
            mine.copy_(theirs)
        # The copies wrote into the memory under every tensor the learner's function sees, in place, as the
        # verifier's own refills and poison do in a notebook's process. Those tensors were made over the copies'
        # storage (`_native`), so they do not share its version counter: bumped here, a key built on `_version`
        # sees the write on both paths alike.
        for args in argsets:
            for a in args:
                if isinstance(a, self.torch.Tensor):
                    increment_version(a)
        facts = gather.run_batch(fn, argsets, kwargs, msg.reps, traced=msg.traced, on_device=msg.on_device)
        for theirs, mine in pairs:  # results, guard bands and inputs back, for the verifier to check
            theirs.copy_(mine)
        if msg.on_device:
            gather.CLOCKS.sync()
        return Batched(facts)

    def serve(self):
        handlers = {Prepare: self.prepare, Load: self.load, Describe: self.describe, Call: self.call, Bind: self.bind,
                    Batch: self.batch}
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                return
            if isinstance(msg, Quit):
                self.conn.send(Loaded([], []))
                return
            # A timed batch's request holds garbage collection off until its reply is sent, so that the
            # collection its calls set off falls outside the verifier's clock (grader.calls.seam).
            collecting = gc.isenabled()
            if isinstance(msg, Batch):
                gc.disable()
            try:
                handler = handlers.get(type(msg))
                reply = handler(msg) if handler else Failed("CheckFailed", "failed", f"unknown request {msg!r}")
            except gather.GPUBroken as exc:
                self.conn.send(Failed("WorkerCrashed", "crashed", str(exc), crashed=True))
                return  # the CUDA context is broken: nothing more can run in this process
            except gather.LearnerRaised as raised:
                reply = _failed(translate(raised.exc, f"`{getattr(msg, 'name', 'your code')}`"))
            except LadderError as exc:
                reply = _failed(exc)
            except Exception as exc:  # a fault in the worker itself: report it, keep serving
                reply = Failed("CheckFailed", "failed", f"the grader's worker failed: {type(exc).__name__}: {exc}")
            try:
                self.conn.send(reply)
            except Exception as exc:  # e.g. an unpicklable result slipped through
                self.conn.send(Failed("CheckFailed", "not-plain", f"your function's result cannot be sent back: {exc}"))
            finally:
                if collecting:
                    gc.enable()


def _failed(exc: LadderError) -> Failed:
    d = as_dict(exc)
    return Failed(d["cls"], d["reason"], d["message"])


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def main(conn, log_path: str, inherited: tuple = ()) -> None:
    """Entry point of the worker process. It finds the GPU as the verifier does (the same machine and
    settings), so the two agree. `inherited`: the verifier's connections a forked worker holds copies
    of, closed first."""
    for theirs in inherited:
        theirs.close()
    # A Unix session of its own (setsid): whatever the learner's code starts carries the worker's session id or a new
    # one, never the verifier's, which is how the verifier tells what it adopts from here from its own children
    # (grader.processes). Its tree stays under it: it adopts what is orphaned below it (facts.start_watching).
    try:
        os.setsid()
    except OSError:
        pass
    _redirect_output(log_path)
    from ..cuda.gpu import gpu_or_reason

    has_gpu = gpu_or_reason()[0]
    if not has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"
    config.start_quietly()
    import torch.multiprocessing  # noqa: F401 - registers the tensor-sharing reductions
    Worker(conn, has_gpu).serve()
