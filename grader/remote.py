"""The verifier's side of the worker: start it, talk to it with time limits, stand in for its functions.

A `RemoteFunction` looks like the learner's function to the grader's checks (`fn(*inputs, out)`),
but the call runs in the worker on the same tensors (shared, not copied). After every call the
worker's facts are enforced here, in the verifier, in a fixed order:

1. the worker died or broke its GPU context -> `crashed`; it did not answer in time -> `timed-out`
2. attributes of torch, Triton, the clock or the grader replaced -> `tampered`
3. a kernel raised and the launcher caught it -> `swallowed-error`
4. a thread the launcher started still runs -> `stray-thread`
5. persisting L2 cache reserved -> `l2-persist`
6. a result that is not plain data -> `not-plain`
7. for kernel launchers (inside `launching()`): no kernel launched -> `kernel-unused`; torch ran a
   computing operation on the grader's tensors -> `library-compute`
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
import pickle
import tempfile
import threading
import time

from .errors import CheckFailed, CheckTimedOut, WorkerCrashed, from_dict

_POLICY: contextvars.ContextVar[dict | None] = contextvars.ContextVar("ladder_launch_policy", default=None)
_COUNT_TC: contextvars.ContextVar[bool] = contextvars.ContextVar("ladder_count_tensor_cores", default=False)

# Seconds one request may take. The first call of a function compiles (NVRTC, Triton, autotuning).
FIRST_CALL_TIMEOUT_S = float(os.environ.get("LADDER_FIRST_CALL_TIMEOUT_S", 300))
CALL_TIMEOUT_S = float(os.environ.get("LADDER_CALL_TIMEOUT_S", 60))
LOAD_TIMEOUT_S = float(os.environ.get("LADDER_LOAD_TIMEOUT_S", 120))


@contextlib.contextmanager
def launching(noop: bool = False):
    """Calls inside are kernel launches: enforce the launcher rules; `noop` switches kernels off."""
    token = _POLICY.set({"launcher": True, "noop": noop})
    try:
        yield
    finally:
        _POLICY.reset(token)


@contextlib.contextmanager
def counting_tensor_cores():
    """Calls inside run instrumented copies of the learner's CUDA kernels (grader.tccount); each
    call's `last_facts["tensor_cores"]` says what their tensor cores did."""
    token = _COUNT_TC.set(True)
    try:
        yield
    finally:
        _COUNT_TC.reset(token)


def is_remote(fn) -> bool:
    return isinstance(fn, RemoteFunction)


class WorkerHandle:
    """One worker process, started with 'spawn' (a fresh interpreter), and its log."""

    def __init__(self, has_gpu: bool):
        import multiprocessing as mp

        import torch.multiprocessing  # noqa: F401 - tensor reductions for the connection

        from . import worker

        ctx = mp.get_context("spawn")
        fd, self.log_path = tempfile.mkstemp(prefix="ladder-worker-", suffix=".log")
        os.close(fd)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker.main, args=(child, self.log_path, has_gpu), daemon=True)
        self.proc.start()
        child.close()
        self.has_gpu = has_gpu
        self.called: set[str] = set()
        self.dead: str | None = None

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
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            self._died(what)
        deadline = time.monotonic() + timeout
        while True:
            if self.conn.poll(min(0.2, max(0.0, deadline - time.monotonic()))):
                status, payload = self._receive(deadline, what)
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
        if status == "error":
            exc = from_dict(payload)
            if isinstance(exc, WorkerCrashed):
                self.dead = "your code broke the GPU context of the process running it"
                exc.args = (f"{what}: {exc.args[0]}\n{_crash_hint()}" + self._log_note(),)
            raise exc
        return payload

    def _receive(self, deadline: float, what: str):
        """One reply, read on a helper thread (a garbled length must not block this process) and
        unpickled with `safe_loads`, so bytes the learner's code wrote into the connection can neither
        hang the verifier nor run code in it."""
        box: dict = {}

        def read():
            try:
                box["data"] = self.conn.recv_bytes(MAX_REPLY_BYTES)
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
            status, payload = safe_loads(box["data"])
        except Exception as exc:
            self.kill()
            self.dead = "the connection to the process running your code was corrupted"
            raise CheckFailed(f"{what}: the process running your code sent the grader data it will not read "
                              f"({type(exc).__name__}: {exc}): something in your code wrote into the grader's "
                              "connection.", reason="tampered") from None
        return status, payload

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

    def kill(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)

    def close(self):
        if self.proc.is_alive() and not self.dead:
            try:
                self.conn.send(("quit",))
                if self.conn.poll(5):
                    self.conn.recv()
            except Exception:
                pass
        self.kill()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


MAX_REPLY_BYTES = 64 * 2**20

# What a worker's reply may contain: plain data, tensors shared through torch.multiprocessing, NumPy
# arrays. Anything else in the pickle (a function to call while loading, say) is refused.
_SAFE_GLOBALS = {
    ("builtins", n) for n in ("list", "tuple", "dict", "set", "frozenset", "int", "float", "complex", "str", "bytes",
                              "bytearray", "bool", "slice", "range")
} | {
    ("collections", "OrderedDict"), ("copyreg", "_reconstructor"),
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


def _crash_hint() -> str:
    return ("Most often an index past the end of an array (an illegal memory access). Only this check failed; "
            "the others run in fresh processes. `ladder check --sanitize` names the kernel and line.")


class RemoteFunction:
    """Stands in for the learner's function `name`, defined in the worker."""

    def __init__(self, handle: WorkerHandle, name: str, trailing: tuple = ()):
        self.handle, self.name, self.trailing = handle, name, tuple(trailing)
        self.__name__ = name
        self.last_facts: dict = {}
        # (shapes of the arguments, names of the kernels launched) for every launcher call, no-op
        # probes included: what a call on inputs of a given shape launches when it does the work.
        self.history: list[tuple[tuple, frozenset]] = []

    def __repr__(self) -> str:
        return f"<your {self.name}, running in a separate process>"

    def with_trailing(self, *extra) -> "RemoteFunction":
        return RemoteFunction(self.handle, self.name, self.trailing + tuple(extra))

    def _timeout(self) -> float:
        return CALL_TIMEOUT_S if self.name in self.handle.called else FIRST_CALL_TIMEOUT_S

    def call(self, *args, _opts: dict | None = None, **kwargs):
        policy = dict(_POLICY.get() or {})
        policy.update(_opts or {})
        if _COUNT_TC.get():
            policy["count_tensor_cores"] = True
        what = f"`{self.name}`"
        result, facts = self.handle.request(("call", self.name, args + self.trailing, kwargs, policy),
                                            self._timeout(), what)
        self.handle.called.add(self.name)
        self.last_facts = facts
        enforce(facts, what, launcher=bool(policy.get("launcher")))
        if policy.get("launcher") and not policy.get("record"):
            self.history.append((shape_key(args + self.trailing), frozenset(facts.get("launches", ()))))
        return result

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def record_launches(self, *args) -> list[dict]:
        """The kernels made with load_kernel that this launcher launches (recorded, never run)."""
        self.call(*args, _opts={"record": True})
        return self.last_facts.get("recorded", [])

    def peak_memory(self, *args) -> int:
        """Bytes the call allocated above what the worker held before it (torch's allocator)."""
        with launching():
            self.call(*args, _opts={"memory": True})
        return int(self.last_facts.get("peak_bytes") or 0)

    def batch(self, argsets: list[tuple], after_batch=None) -> "RemoteBatch":
        return RemoteBatch(self, argsets, after_batch)


def shape_key(args) -> tuple:
    """What a launcher may legitimately branch on: tensor shapes, dtypes and devices, other values."""
    key = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            key.append(("tensor", tuple(a.shape), str(a.dtype), str(getattr(a, "device", ""))))
        else:
            key.append(("value", repr(a)))
    return tuple(key)


def enforce(facts: dict, what: str, launcher: bool) -> None:
    if facts.get("tampered"):
        names = ", ".join(facts["tampered"][:6])
        raise CheckFailed(f"{what}: your code replaced {names}. The grader's timer, comparisons and kernels "
                          "must be left as they are (the verdict is computed in a separate process anyway).",
                          reason="tampered")
    if facts.get("errors"):
        raise CheckFailed(f"{what}: your kernel raised an error and your code caught it and carried on:\n  "
                          + "\n  ".join(facts["errors"][:3])
                          + "\nLet errors from your kernel propagate; a fallback hides a broken kernel.",
                          reason="swallowed-error")
    if facts.get("stray_threads"):
        raise CheckFailed(f"{what}: returned while a thread it started was still running "
                          f"({', '.join(facts['stray_threads'])}). All work must be done, or at least launched on "
                          "the GPU, before your function returns.", reason="stray-thread")
    if facts.get("l2_limit"):
        raise CheckFailed(f"{what}: your code reserved {facts['l2_limit']:,} bytes of persisting L2 cache "
                          "(cudaLimitPersistingL2CacheSize). Timed kernels must start from the same cache as "
                          "torch's.", reason="l2-persist")
    if facts.get("not_plain"):
        raise CheckFailed(f"{what}: returned a {facts['not_plain']}; the grader accepts only plain values "
                          "(numbers, strings, tuples and lists of them, torch tensors, NumPy arrays).",
                          reason="not-plain")
    if launcher:
        if not facts.get("launches"):
            raise CheckFailed(f"{what}: returned without launching any kernel made with load_kernel or "
                              "@triton.jit. The result must come from your kernel.", reason="kernel-unused")
        if facts.get("ops"):
            raise CheckFailed(f"{what}: torch computed with the grader's tensors inside your launcher "
                              f"({', '.join(facts['ops'][:6])}). Only your kernel may compute; the launcher may "
                              "allocate, view and fill.", reason="library-compute")


class RemoteBatch:
    """Learner calls timed in batches in the worker, checked against the verifier's own clock.

    `timed_batch(reps)` asks the worker for `reps` calls in a row (rotating through the argument sets,
    on native copies of them) between two CUDA events, the second recorded after a device-wide
    synchronize, so work on any stream is inside the interval. The events are taken with references
    the worker captured before any learner code ran; the verifier's clock around the whole request
    bounds them: events longer than that clock are impossible (`timer-mismatch`). Every timed call
    must launch a kernel; after the batch the worker copies outputs, guard bands and inputs back,
    and `after_batch` re-checks a sample.
    """

    def __init__(self, fn: RemoteFunction, argsets: list[tuple], after_batch=None):
        self.fn, self.argsets, self.after_batch = fn, argsets, after_batch
        handle = fn.handle
        args = [tuple(a) + fn.trailing for a in argsets]
        # The kernels every checked call on inputs of this shape launched (the checked call before
        # timing and the no-op probe): each timed call must launch them too. A call that launches
        # only some of them, say a fingerprint kernel that finds a kept result, skipped the work.
        seen = [names for key, names in fn.history if key == shape_key(args[0])] if args else []
        self.required = frozenset.intersection(*seen) if seen else frozenset()
        self.bid = handle.request(("bind", fn.name, args, {}), CALL_TIMEOUT_S, f"`{fn.name}`")
        self.batches = 0

    def timed_batch(self, reps: int) -> float:
        what = f"`{self.fn.name}` (timed runs)"
        t0 = time.perf_counter()
        facts = self.fn.handle.request(("batch", self.bid, reps), CALL_TIMEOUT_S + reps * 0.5, what)
        host_ms = (time.perf_counter() - t0) * 1e3
        enforce(facts, what, launcher=False)
        if reps and facts.get("min_launches", 0) == 0:
            raise CheckFailed(f"{what}: some of the timed calls launched none of your kernels. Every call must "
                              "compute its result (no results kept from an earlier call).", reason="kernel-unused")
        for names, count in facts.get("kernel_sets", []):
            missing = sorted(self.required - set(names))
            if missing:
                ran = ", ".join(f"`{n}`" for n in names) or "nothing"
                raise CheckFailed(
                    f"{what}: {count} of {reps} timed calls launched only {ran}, without "
                    f"{', '.join(f'`{n}`' for n in missing)}, which a checked call on inputs of the same shape "
                    "launched. Every call must do the whole computation (no results kept from an earlier call).",
                    reason="kernel-unused")
        event_ms = facts.get("event_ms")
        if event_ms is None or event_ms <= 0:
            raise CheckFailed(f"{what}: the batch reported no time.", reason="timer-mismatch")
        if event_ms > host_ms:
            raise CheckFailed(
                f"{what}: the GPU's events report {event_ms:.3f} ms for the batch, more than the {host_ms:.3f} ms the "
                "grader's own clock saw for the whole request: the timing was interfered with.", reason="timer-mismatch")
        self.batches += 1
        if self.after_batch is not None:
            self.after_batch(reps)
        return event_ms
