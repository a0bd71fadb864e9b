"""The worker: a fresh process that runs the learner's code, and decides nothing.

`grader.verify` (the verifier) starts one worker per graded check. The worker executes the
learner's cells (the notebook's setup cell, then its solution cells, definitions only) and then
serves requests over a `multiprocessing` connection: call a function on tensors the verifier shares
with it (CUDA IPC on a GPU, shared memory on a CPU), run a batch of timed calls, record which kernels
a launcher launches. It reports facts (what ran, what it raised, which kernels launched, which torch
operations ran on the inputs, which attributes of torch, Triton, the clock or the grader were
replaced); the verifier checks results, times with its own clock and gives the verdict.

The worker's own checks are installed before any learner code runs, from references taken at
startup, so rebinding `time.perf_counter` or `torch.cuda.synchronize` in a cell does not blind them.
Its stdout and stderr go to a log file the verifier reads, never to the notebook.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import threading
import traceback

# Names of attributes the learner's code must leave alone: (module, attribute path).
WATCHED = [
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "time"), ("time", "monotonic"),
    ("time", "sleep"), ("statistics", "median"), ("statistics", "mean"), ("statistics", "quantiles"),
    ("torch", "equal"), ("torch", "allclose"), ("torch", "isclose"), ("torch.testing", "assert_close"),
    ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "current_stream"),
    ("torch.cuda", "Event.record"), ("torch.cuda", "Event.elapsed_time"), ("torch.cuda", "Event.synchronize"),
    ("torch", "Tensor.__eq__"), ("torch", "Tensor.copy_"), ("torch", "Tensor.fill_"), ("torch", "Tensor.data_ptr"),
    ("triton.testing", "do_bench"),
]
GRADER_MODULES = ("grader.exercise", "grader.correctness", "grader.timing", "grader.kernels", "grader.worker",
                  "grader.remote", "grader.tccount", "grader.errors", "grader.bars", "grader.device", "grader.answers",
                  "grader.quiet",
                  "grader.chapters.ch01", "grader.chapters.ch02", "grader.chapters.ch03", "grader.chapters.ch04",
                  "grader.chapters.ch05", "grader.chapters.ch06")

# Torch operations a launcher may run on the grader's tensors: allocation, views, fills, scalars.
ALLOWED_OPS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "fill", "fill_", "zero_", "view", "_unsafe_view", "reshape", "as_strided",
    "t", "transpose", "permute", "expand", "slice", "select", "unsqueeze", "squeeze", "alias", "detach",
    "lift_fresh", "_local_scalar_dense", "is_nonzero", "split", "split_with_sizes", "chunk", "unbind", "narrow",
    "unflatten", "view_as", "resolve_conj", "resolve_neg", "arange", "sym_size", "sym_stride", "sym_numel",
    "is_same_size", "record_stream", "set_", "_reshape_alias",
}


class _State:
    """What the learner's code did during the current request."""

    def __init__(self):
        self.launches: list[str] = []
        self.errors: list[str] = []
        self.noop = False
        self.recording = False
        self.recorded: list = []
        self.ops: list[str] = []          # torch ops run on the grader's tensors (or views of them)
        self.input_storages: set[int] = set()
        self.quiet_ops = 0                # >0 inside library code (kernel launches, autotuning)
        self.tally = None                 # a grader.tccount.Tally while tensor-core work is counted

    def reset(self, inputs=()):
        self.launches, self.errors, self.ops, self.recorded = [], [], [], []
        self.input_storages = set()
        for t in inputs:
            try:
                self.input_storages.add(t.untyped_storage().data_ptr())
            except Exception:
                pass


STATE = _State()


def _resolve(module: str, path: str):
    obj = sys.modules.get(module)
    for part in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


class Watch:
    """Identities of the watched attributes and the grader's functions, taken before learner code runs."""

    def __init__(self):
        self.seen = {}
        for module, path in WATCHED:
            if module in sys.modules:
                self.seen[(module, path)] = _resolve(module, path)
        for name in GRADER_MODULES:
            mod = sys.modules.get(name)
            if mod is None:
                continue
            self.seen[("sys.modules", name)] = mod
            for attr, value in vars(mod).items():
                if callable(value) and not isinstance(value, type(sys)) and str(getattr(value, "__module__", "")
                                                                               ).startswith("grader"):
                    self.seen[(name, attr)] = value
                    if isinstance(value, type):
                        for cattr, cvalue in vars(value).items():
                            if callable(cvalue):
                                self.seen[(name, f"{attr}.{cattr}")] = cvalue

    def changed(self) -> list[str]:
        out = []
        for (module, path), value in self.seen.items():
            now = sys.modules.get(path) if module == "sys.modules" else _resolve(module, path)
            if now is not value:
                out.append(f"{module}.{path}" if module != "sys.modules" else f"sys.modules[{path!r}]")
        return out


# ------------------------------------------------------------------------------ instrumentation

def _install_hooks():
    """Count and optionally suppress launches of the learner's kernels (CudaKernel and Triton)."""
    from . import tccount
    from .kernels import CudaKernel

    original_call = CudaKernel.__call__

    def call(self, grid, block, args, shared_mem: int = 0):
        STATE.launches.append(self.name)
        if STATE.recording:
            if all(k is not self for k in STATE.recorded):
                STATE.recorded.append(self)
            return None
        if STATE.noop:
            self.compile()
            return None
        STATE.quiet_ops += 1
        try:
            if STATE.tally is not None:
                return tccount.launch_counted(self, grid, block, args, shared_mem, STATE.tally)
            return original_call(self, grid, block, args, shared_mem)
        except Exception as exc:
            if STATE.quiet_ops == 1:  # raised to the learner's code, not inside a library that handles it
                STATE.errors.append(f"`{self.name}`: {type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''}")
            raise
        finally:
            STATE.quiet_ops -= 1

    CudaKernel.__call__ = call
    try:
        import triton  # noqa: F401
    except ImportError:
        return
    targets = []
    from triton.runtime import jit as _jit
    targets.append((_jit.JITFunction, True))
    try:
        from triton.runtime import interpreter as _interp
        if hasattr(_interp, "InterpretedFunction"):
            targets.append((_interp.InterpretedFunction, True))
    except ImportError:
        pass
    try:
        from triton.runtime import autotuner as _auto
        for name in ("Autotuner", "Heuristics"):
            if hasattr(_auto, name):
                targets.append((getattr(_auto, name), False))
    except ImportError:
        pass
    for cls, is_kernel in targets:
        if "run" not in vars(cls):
            continue
        cls.run = _wrap_run(cls.run, is_kernel)


def _kernel_name(fn) -> str:
    inner = getattr(fn, "fn", None)
    while inner is not None and hasattr(inner, "fn") and not hasattr(inner, "__code__"):
        inner = inner.fn
    return getattr(inner, "__name__", None) or getattr(fn, "__name__", type(fn).__name__)


def _wrap_run(original, is_kernel: bool):
    from . import tccount

    def run(self, *args, **kwargs):
        if is_kernel:
            STATE.launches.append(_kernel_name(self))
            if STATE.noop or STATE.recording:
                return None
        STATE.quiet_ops += 1
        try:
            if is_kernel and STATE.tally is not None and hasattr(self, "device_caches"):
                return tccount.launch_triton_counted(self, original, args, kwargs, STATE.tally, _kernel_name(self))
            return original(self, *args, **kwargs)
        except Exception as exc:
            if STATE.quiet_ops == 1:  # raised to the learner's code (an autotuner pruning a config is not)
                STATE.errors.append(f"`{_kernel_name(self)}`: {type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''}")
            raise
        finally:
            STATE.quiet_ops -= 1

    run.__wrapped__ = original
    return run


def _op_recorder():
    """A TorchDispatchMode that notes torch ops run on the grader's tensors outside kernel launches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if STATE.quiet_ops == 0:
                name = func.overloadpacket.__name__
                if name not in ALLOWED_OPS:
                    touched = False
                    for a in list(args) + list(kwargs.values()):
                        for t in (a if isinstance(a, (list, tuple)) else (a,)):
                            if isinstance(t, torch.Tensor):
                                try:
                                    if t.untyped_storage().data_ptr() in STATE.input_storages:
                                        touched = True
                                except Exception:
                                    pass
                    if touched:
                        STATE.ops.append(f"aten::{name}")
            return func(*args, **kwargs)

    return Recorder


# ---------------------------------------------------------------------------------- learner code

def definitions_only(source: str, filename: str):
    """Compile each top-level statement of a cell, leaving out bare calls (`f(x)`, `print(...)`).

    A solution cell defines kernels, launchers and constants; a call a learner left in it to try
    their kernel would run here without the notebook's other state. Returns [(code, lineno)].
    """
    tree = ast.parse(source, filename)
    out = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
            continue
        module = ast.Module(body=[node], type_ignores=[])
        out.append((compile(module, filename, "exec"), node.lineno))
    return out


def run_cell(name: str, source: str, ns: dict) -> list[str]:
    """Execute a cell's definitions under its own file name; return the problems met, if any."""
    filename = f"<cell {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    problems = []
    try:
        statements = definitions_only(source, filename)
    except SyntaxError as exc:
        return [f"cell {name}: SyntaxError at line {exc.lineno}: {exc.msg}"]
    for code, lineno in statements:
        try:
            exec(code, ns)
        except BaseException as exc:  # noqa: BLE001 - a learner's cell may raise anything, even SystemExit
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append(f"cell {name}, line {lineno}: {type(exc).__name__}: {exc}")
    return problems


def learner_frames(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<cell ")]
    return "".join(traceback.format_list(frames[-4:]))


# ----------------------------------------------------------------------------------- the server

class Worker:
    def __init__(self, conn, has_gpu: bool):
        self.conn = conn
        self.has_gpu = has_gpu
        self.ns: dict = {"__name__": "__learner__"}
        self.bound: dict[int, tuple] = {}
        self.keep: list = []   # tensors returned to the verifier stay alive until the next request
        import torch
        self.torch = torch
        if has_gpu:
            self._sync = torch._C._cuda_synchronize
            self._event = torch.cuda.Event
            self._record = torch.cuda.Event.record
            self._elapsed = torch.cuda.Event.elapsed_time
        else:
            self._sync = lambda: None
        _install_hooks()
        self.recorder = _op_recorder()
        import time
        self._clock = time.perf_counter
        self.watch = None

    # -- helpers
    def _threads(self) -> set:
        return {t for t in threading.enumerate() if t.is_alive()}

    def _l2_limit(self) -> int:
        if not self.has_gpu:
            return 0
        try:
            import cupy
            return int(cupy.cuda.runtime.deviceGetLimit(0x06))  # cudaLimitPersistingL2CacheSize
        except Exception:
            return 0

    def _reset_l2(self) -> None:
        if not self.has_gpu:
            return
        try:
            import cupy
            cupy.cuda.runtime.deviceSetLimit(0x06, 0)
        except Exception:
            pass

    def _facts(self, before_threads: set) -> dict:
        new = [t for t in self._threads() - before_threads if not t.daemon or not t.name.startswith("pydevd")]
        for t in new:
            t.join(timeout=0.05)
        stray = [t.name for t in new if t.is_alive()]
        return {"launches": list(STATE.launches), "errors": list(STATE.errors), "ops": sorted(set(STATE.ops)),
                "stray_threads": stray, "tampered": self.watch.changed() if self.watch else [],
                "l2_limit": self._l2_limit()}

    def _sync_or_crash(self):
        try:
            self._sync()
        except Exception as exc:
            raise _Crashed(f"the GPU reported an error after your code ran: {str(exc).splitlines()[0]}") from None

    def _call(self, fn, args, kwargs, record_ops: bool = True):
        try:
            if not record_ops:
                return fn(*args, **kwargs)
            with self.recorder():
                return fn(*args, **kwargs)
        except _Crashed:
            raise
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _LearnerRaised(exc) from None

    # -- requests
    def load(self, cells):
        from .notebook import Session  # noqa: F401 - make sure the quiet start() is importable
        os.environ["LADDER_QUIET_START"] = "1"
        problems = []
        import importlib
        for chapter in ("ch01", "ch02", "ch03", "ch04", "ch05", "ch06"):  # watched before any learner code
            try:
                importlib.import_module(f"grader.chapters.{chapter}")
            except Exception:
                pass
        self.watch = Watch()
        for name, source in cells:
            problems += run_cell(name, source, self.ns)
        return {"problems": problems, "tampered": self.watch.changed()}

    def describe(self, names):
        out = {}
        for name in names:
            if name not in self.ns:
                out[name] = ("missing", None)
            elif callable(self.ns[name]):
                out[name] = ("callable", None)
            else:
                value = self.ns[name]
                out[name] = ("value", value) if _plain(value) else ("opaque", type(value).__name__)
        return out

    def call(self, name, args, kwargs, opts):
        fn = self.ns[name]
        STATE.reset([a for a in list(args) + list(kwargs.values()) if isinstance(a, self.torch.Tensor)])
        STATE.noop = bool(opts.get("noop"))
        STATE.recording = bool(opts.get("record"))
        if opts.get("count_tensor_cores") and self.has_gpu:
            from .tccount import Tally
            STATE.tally = Tally()
        threads = self._threads()
        self._reset_l2()
        peak = None
        try:
            if opts.get("memory") and self.has_gpu:
                self._sync()
                self.torch.cuda.reset_peak_memory_stats()
                before = self.torch.cuda.memory_allocated()
            result = self._call(fn, args, kwargs)
            self._sync_or_crash()
            if opts.get("memory") and self.has_gpu:
                peak = self.torch.cuda.max_memory_allocated() - before
        finally:
            STATE.noop = STATE.recording = False
            tally, STATE.tally = STATE.tally, None
        facts = self._facts(threads)
        facts["peak_bytes"] = peak
        if tally is not None:
            facts["tensor_cores"] = tally.as_dict()
        if opts.get("record"):
            facts["recorded"] = [{"name": k.name, "source": k.source, "options": list(k.options), "where": k.where}
                                 for k in STATE.recorded]
        if not _plain(result):
            facts["not_plain"] = _describe_type(result)
            result = None
        self.keep = [result]
        return result, facts

    def _native(self, t):
        """A copy of `t` in memory this process allocated, same storage layout (guard bands included).

        Launching on memory mapped from the verifier (CUDA IPC) costs far more host time a launch
        than on the process's own memory, so timed batches run on native copies, refreshed from the
        verifier's tensors before each batch and copied back after it.
        """
        torch = self.torch
        storage = t.untyped_storage()
        native = torch.empty(storage.nbytes(), dtype=torch.uint8, device=t.device)
        view = torch.empty(0, dtype=t.dtype, device=t.device).set_(native.untyped_storage(), t.storage_offset(),
                                                                 t.size(), t.stride())
        whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
        return view, (whole, native)

    def bind(self, name, argsets, kwargs):
        bid = len(self.bound) + 1
        pairs, native_sets = [], []
        for args in argsets:
            native_args = []
            for a in args:
                if isinstance(a, self.torch.Tensor) and self.has_gpu:
                    view, pair = self._native(a)
                    native_args.append(view)
                    pairs.append(pair)
                else:
                    native_args.append(a)
            native_sets.append(tuple(native_args))
        self.bound[bid] = (self.ns[name], native_sets, kwargs, pairs)
        return bid

    def batch(self, bid, reps):
        fn, argsets, kwargs, pairs = self.bound[bid]
        allin = [a for args in argsets for a in args if isinstance(a, self.torch.Tensor)]
        for theirs, mine in pairs:  # the verifier's current inputs, poisoned outputs and guard bands
            mine.copy_(theirs)
        threads = self._threads()
        self._reset_l2()
        per_call = []
        self._sync()
        if self.has_gpu:
            start, end = self._event(enable_timing=True), self._event(enable_timing=True)
            self._record(start)
        t0 = self._clock()
        STATE.reset(allin)
        for r in range(reps):
            STATE.launches = []
            self._call(fn, argsets[r % len(argsets)], kwargs, record_ops=False)
            per_call.append(tuple(sorted(set(STATE.launches))))
        # Device-wide synchronize first, then the end event: work on any stream is inside the interval.
        self._sync_or_crash()
        if self.has_gpu:
            self._record(end)
            self._sync()
        host_ms = (self._clock() - t0) * 1e3
        event_ms = self._elapsed(start, end) if self.has_gpu else host_ms
        for theirs, mine in pairs:  # results, guard bands and inputs back, for the verifier to check
            theirs.copy_(mine)
        self._sync()
        facts = self._facts(threads)
        kernel_sets: dict[tuple, int] = {}
        for names in per_call:
            kernel_sets[names] = kernel_sets.get(names, 0) + 1
        facts.update(min_launches=min(map(len, per_call)) if per_call else 0, event_ms=event_ms,
                     worker_host_ms=host_ms, kernel_sets=[[list(k), n] for k, n in kernel_sets.items()])
        return facts

    def serve(self):
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                return
            op = msg[0]
            if op == "quit":
                self.conn.send(("ok", None))
                return
            try:
                if op == "ping":
                    reply = ("ok", None)
                elif op == "load":
                    reply = ("ok", self.load(msg[1]))
                elif op == "describe":
                    reply = ("ok", self.describe(msg[1]))
                elif op == "call":
                    result, facts = self.call(*msg[1:])
                    reply = ("ok", (result, facts))
                elif op == "bind":
                    reply = ("ok", self.bind(*msg[1:]))
                elif op == "batch":
                    reply = ("ok", self.batch(*msg[1:]))
                else:
                    reply = ("error", {"cls": "CheckFailed", "reason": "failed", "message": f"unknown request {op!r}"})
            except _Crashed as exc:
                self.conn.send(("error", {"cls": "WorkerCrashed", "reason": "crashed", "message": str(exc)}))
                return  # the CUDA context is broken: nothing more can run in this process
            except _LearnerRaised as wrapped:
                reply = ("error", _learner_error(wrapped.exc, STATE))
            except Exception as exc:  # a fault in the worker itself: report it, keep serving
                reply = ("error", {"cls": "CheckFailed", "reason": "failed",
                                   "message": f"the grader's worker failed: {type(exc).__name__}: {exc}"})
            try:
                self.conn.send(reply)
            except Exception as exc:  # e.g. an unpicklable result slipped through
                self.conn.send(("error", {"cls": "CheckFailed", "reason": "not-plain",
                                          "message": f"your function's result cannot be sent back: {exc}"}))


class _Crashed(Exception):
    pass


class _LearnerRaised(Exception):
    def __init__(self, exc):
        super().__init__(str(exc))
        self.exc = exc


def _still_a_stub(exc: BaseException) -> bool:
    """A released stub: NotImplementedError in Python, or in a `@triton.jit` body, where Triton's
    compiler rejects the `raise` ("unsupported AST node type: Raise", quoting the line) and its CPU
    interpreter wraps the NotImplementedError in an InterpreterError."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, NotImplementedError):
            return True
        if type(exc).__name__ == "CompilationError" and "NotImplementedError" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _learner_error(exc: BaseException, state: _State) -> dict:
    from .errors import LadderError, as_dict

    if isinstance(exc, LadderError):
        return as_dict(exc)
    if _still_a_stub(exc):
        return {"cls": "NotImplementedYet", "reason": "not-written", "message": "still the released stub: "
                "replace `raise NotImplementedError()` with your code"}
    text = str(exc).strip()
    where = learner_frames(exc)
    reason = "compile-error" if type(exc).__name__ in ("CompilationError", "CompileTimeAssertionFailure") else "raised"
    msg = f"{type(exc).__name__}: {text}" + (f"\nin your code:\n{where}" if where else "")
    return {"cls": "KernelCompileError" if reason == "compile-error" else "CheckFailed", "reason": reason, "message": msg}


def _plain(value, depth: int = 0) -> bool:
    """Plain data only: numbers, strings, None, exact torch tensors or numpy arrays, and containers of them."""
    import numpy as np
    import torch

    if depth > 4:
        return False
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    if type(value) is torch.Tensor or type(value) is np.ndarray or isinstance(value, np.generic):
        return True
    if type(value) in (list, tuple):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) in (str, int) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _describe_type(value) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ not in ("builtins",) else t.__qualname__


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def main(conn, log_path: str, has_gpu: bool) -> None:
    """Entry point of the worker process (started with the 'spawn' method)."""
    _redirect_output(log_path)
    if not has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ["LADDER_QUIET_START"] = "1"
    import torch.multiprocessing  # noqa: F401 - registers the tensor-sharing reductions
    Worker(conn, has_gpu).serve()
