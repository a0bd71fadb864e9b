"""Gather the facts of one call of the learner's code, in the process that runs it.

The same code runs in the grader's worker (isolated grading) and in the notebook's own process (a
learner's cell, `ladder check`): which kernels the call launched and which of them raised, the torch
operations it ran on the grader's tensors, the threads it left running, the persisting L2 cache it
reserved, whether it replaced parts of torch, Triton, the clock or the grader, which Triton kernels
came from installed packages, every kernel the device executed meanwhile (grader.cuda.trace; launcher
calls, no-op probes and traced batches), what it would have timed on a GPU shared with other checks (an
autotuner: grader.cuda.sharing), and on request its peak memory, its tensor-core work or the
kernels it would launch. grader.calls.rules turns the
facts into verdicts; nothing here decides.

References to the clock, the CUDA events and synchronize are taken when this module is imported,
which is before any learner code runs (in the worker, and in a notebook whose setup cell imports the
grader), so a cell that rebinds `time.perf_counter` or `torch.cuda.synchronize` cannot blind them.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time

from .. import processes
from ..cuda import autotune, interpreter, launches, sharing, tccount, trace
from ..cuda.gpu import has_gpu
from .messages import BatchFacts, CallPolicy, Facts, RecordedKernel

# Names of attributes the learner's code must leave alone: (module, attribute path). Every function
# and class of every loaded grader module is watched too.
WATCHED = [
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "time"), ("time", "monotonic"),
    ("time", "sleep"), ("statistics", "median"), ("statistics", "mean"), ("statistics", "quantiles"),
    ("torch", "equal"), ("torch", "allclose"), ("torch", "isclose"), ("torch.testing", "assert_close"),
    ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "current_stream"),
    ("torch.cuda", "Event.record"), ("torch.cuda", "Event.elapsed_time"), ("torch.cuda", "Event.synchronize"),
    ("torch", "Tensor.__eq__"), ("torch", "Tensor.copy_"), ("torch", "Tensor.fill_"), ("torch", "Tensor.data_ptr"),
    ("triton.testing", "do_bench"),
]

# Torch operations a launcher may run on the grader's tensors: allocation, views, fills, scalars.
ALLOWED_OPS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "fill", "fill_", "zero_", "view", "_unsafe_view", "reshape", "as_strided",
    "t", "transpose", "permute", "expand", "slice", "select", "unsqueeze", "squeeze", "alias", "detach",
    "lift_fresh", "_local_scalar_dense", "is_nonzero", "split", "split_with_sizes", "chunk", "unbind", "narrow",
    "unflatten", "view_as", "resolve_conj", "resolve_neg", "arange", "sym_size", "sym_stride", "sym_numel",
    "is_same_size", "record_stream", "set_", "_reshape_alias",
}


def _resolve(module: str, path: str):
    obj = sys.modules.get(module)
    for part in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


class Watch:
    """Identities of the watched attributes and of everything the grader's modules hold, taken before
    learner code runs: every function and class (and their methods), the code object each runs (a
    function's `__code__` can be swapped in place, keeping its identity), every module-level object of
    the grader and its attributes (the clock and event reader in `CLOCKS`, this watch itself, the
    trace's state), and the contents of module-level constants (UPPER_CASE sets and lists: the
    allow-lists). In the worker the verifier does not rely on any of it for the time it judges
    (grader.calls.trusted); it catches what can be caught where the learner's code runs."""

    def __init__(self):
        # (name shown, the object holding it, the attribute, the value it held): one getattr per entry to
        # compare, since `tampered()` runs after every call of the learner's function. The holder of a
        # nested attribute (a class's method, CLOCKS's reader) is watched as an entry of its own.
        self.seen: list[tuple[str, object, str, object]] = []
        self.contents = []
        self.late = []   # watched attributes of modules not imported yet (see _defined_in_place)
        for module, path in WATCHED:
            if module in sys.modules:
                holder, _, attr = path.rpartition(".")
                self._add(f"{module}.{path}", _resolve(module, holder) if holder else sys.modules[module], attr)
            else:
                self.late.append((module, path))
        for name, mod in list(sys.modules.items()):
            if not (name == "grader" or name.startswith("grader.")) or mod is None:
                continue
            self.seen.append((f"sys.modules[{name!r}]", sys.modules, name, mod))
            for attr, value in list(vars(mod).items()):
                if isinstance(value, type(sys)) or attr.startswith("__"):
                    continue
                if callable(value) and str(getattr(value, "__module__", "")).startswith("grader"):
                    self._function(f"{name}.{attr}", mod, attr)
                    if isinstance(value, type):
                        for cattr, cvalue in vars(value).items():
                            if callable(cvalue):
                                self._function(f"{name}.{attr}.{cattr}", value, cattr)
                elif isinstance(value, _IMMUTABLE) or isinstance(value, Watch):
                    continue   # (a watch taken again replaces the last one: not the learner's doing)
                elif type(value).__module__.startswith("grader") and hasattr(value, "__dict__"):
                    # An object of the grader's (CLOCKS, an exercise, a case): itself and what it holds.
                    self._add(f"{name}.{attr}", mod, attr)
                    for oattr in list(vars(value)):
                        self._add(f"{name}.{attr}.{oattr}", value, oattr)
                elif attr.isupper() and not attr.startswith("_"):
                    # A public constant (an allow-list): itself, and its contents where they could be edited.
                    self._add(f"{name}.{attr}", mod, attr)
                    if isinstance(value, (set, list, dict)):
                        self.contents.append((f"{name}.{attr}", value, _frozen(value)))

    def _add(self, shown: str, holder, attr: str) -> None:
        self.seen.append((shown, holder, attr, getattr(holder, attr, None)))

    def _function(self, shown: str, holder, attr: str) -> None:
        self._add(shown, holder, attr)
        value = getattr(holder, attr, None)
        if getattr(value, "__code__", None) is not None:
            self._add(f"{shown}.__code__", value, "__code__")

    def changed(self) -> list[str]:
        out = [shown for shown, holder, attr, value in self.seen
               if (holder.get(attr) if holder is sys.modules else getattr(holder, attr, None)) is not value]
        out += [f"the contents of {shown}" for shown, value, frozen in self.contents if _frozen(value) != frozen]
        for module, path in self.late:
            if module in sys.modules and not _defined_in_place(module, _resolve(module, path)):
                out.append(f"{module}.{path}")
        return out


# Module-level values that cannot be changed in place. Private module state (a cache filled on first
# use, a flag) is the module's own business and is not compared: it changes while the grader runs.
_IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None), type(Ellipsis))


def _frozen(value):
    if isinstance(value, dict):
        return tuple(sorted((repr(k), repr(v)) for k, v in value.items()))
    return tuple(sorted(map(repr, value)))


def _defined_in_place(module: str, value) -> bool:
    """For a watched attribute of a module imported after watching began (a notebook's setup cell
    need not import `triton.testing`, which a later cell may then patch): there is no identity to
    compare with, so the attribute must still be code from that module's own package, not a function
    defined in a notebook cell. (Unwrapping is not followed: a wrapper is the learner's code.)"""
    if value is None:
        return True  # not there at all: nothing was put in its place
    top = module.split(".")[0]
    code = getattr(value, "__code__", None)
    if code is None:  # a builtin, a class or a callable object: it must come from the package itself
        return str(getattr(value, "__module__", "") or "").split(".")[0] == top
    package = sys.modules.get(top)
    roots = [str(p) for p in getattr(package, "__path__", [])] or [os.path.dirname(getattr(package, "__file__", "") or "")]
    return any(root and os.path.abspath(code.co_filename).startswith(os.path.abspath(root) + os.sep) for root in roots)


_WATCH: Watch | None = None


def start_watching(again: bool = False) -> None:
    """Take the identities now, unless they were taken already: the worker does (with `again`) after
    importing every chapter and before the learner's cells; a notebook's `start()` does in its setup cell.
    Never again without `again`: a setup cell that patched something before calling `start()` must
    not make the patch the reference."""
    global _WATCH
    if _WATCH is None or again:
        # Whatever the learner's code starts stays below this process, a daemon's double fork included, so that a
        # call's stray processes are seen here (`_stray_processes`) and ended with the check (grader.processes).
        processes.become_subreaper()
        CLOCKS.capture()
        _WATCH = Watch()


def tampered() -> list[str]:
    """What the learner's code replaced since `start_watching()`; taken now if it never was."""
    if _WATCH is None:
        start_watching()
    return _WATCH.changed()


class _Clocks:
    """The clock, synchronize and CUDA events, as they were when the grader started watching (in the worker,
    and in a notebook's setup cell: before any learner code). Taken whole then, never later, so that they
    are part of what `Watch` compares; importing the grader does not import torch for them."""

    def __init__(self):
        self.perf_counter = time.perf_counter
        self.cuda_sync = self.event = self.record = self.elapsed = None

    def capture(self) -> None:
        import torch

        if self.event is None:
            self.cuda_sync = getattr(torch._C, "_cuda_synchronize", None)
            self.event, self.record, self.elapsed = torch.cuda.Event, torch.cuda.Event.record, \
                torch.cuda.Event.elapsed_time
            _CAPTURED["elapsed"] = self.elapsed

    def sync(self) -> None:
        if has_gpu() and self.cuda_sync is not None:
            self.cuda_sync()


_CAPTURED: dict = {}   # what `capture` took, to compare with at the moment a batch's time is read
CLOCKS = _Clocks()


class _Call:
    """The state of the call in progress: launches seen, errors raised, torch ops on the inputs."""

    def __init__(self, policy: CallPolicy, inputs=()):
        self.policy = policy
        self.launches: list[str] = []
        self.errors: list[str] = []
        self.ops: list[str] = []
        self.recorded: list = []
        self.configs: list[str] = []       # the configuration each autotuned launch ran (config_pick)
        self.own: dict[str, int] = {}      # the learner's kernel launches that ran, by name
        self.package: list[str] = []       # Triton kernels launched from installed packages
        self.tuned = False                 # an autotuner timed its configurations (its cache missed)
        self.needs_own_gpu = ""            # what would have timed on a GPU shared with other checks
        # Counted on a GPU by instrumented copies of the kernels, and without one by Triton's interpreter, which
        # counts its tl.dot calls (grader.cuda.interpreter): an interpreted kernel has nothing else to count.
        counts = has_gpu() or interpreter.interpreting()
        self.tally = tccount.Tally() if policy.count_tensor_cores and counts else None
        self.input_storages = set()
        for t in inputs:
            try:
                self.input_storages.add(t.untyped_storage().data_ptr())
            except Exception:
                pass

    def __call__(self, launch: launches.Launch):
        """A launches handler: note the launch, switch it off or record it if asked, count its MMAs,
        and note an error it raises to the learner's code."""
        if launch.is_kernel:
            self.launches.append(launch.name)
            if self.policy.record:
                if launch.kind == "cuda" and all(k is not launch.kernel for k in self.recorded):
                    self.recorded.append(launch.kernel)
                return None
            if self.policy.noop:
                if launch.kind == "cuda":
                    launch.kernel.compile()   # compile errors are still the learner's to see
                return None
        foreign = launch.kind == "triton" and from_package(launch.kernel)
        if foreign and launch.name not in self.package:
            self.package.append(launch.name)
        try:
            if launch.is_kernel and self.tally is not None:
                result = tccount.launch_counted(launch, self.tally)
            elif (launch.kind == "autotune" and self.policy.config_pick is not None
                  and not from_package(launch.kernel)):   # a library's own autotuning is its business
                result = autotune.run_picked(launch, self.policy.config_pick, self.configs)
            elif launch.kind == "autotune" and not from_package(launch.kernel):
                # An autotuner would time its configurations: not on a GPU shared with other checks
                # (grader.cuda.sharing), or which one it kept, and reused in later cells, would depend on them.
                # Compiling them first costs the shared GPU nothing and spares the check run alone. The fact is
                # the call's (its verdict: rules.enforce); the exception only stops the call here.
                if self.policy.shared_gpu:
                    autotune.compile_every_config(launch)
                    self.needs_own_gpu = self.needs_own_gpu or f"autotuning `{launch.name}`"
                    raise sharing.NeedsOwnGPU(f"{self.needs_own_gpu} needs the GPU to itself")
                # A call in which the autotuner timed every configuration kept the device busy for all of them: its
                # device time is not one call's, which the work rule of timed calls compares with (rules.enforce_work).
                cache = getattr(launch.kernel, "cache", None)
                known = len(cache) if isinstance(cache, dict) else None
                result = launch.proceed()
                if known is not None and len(cache) > known:
                    self.tuned = True
            else:
                result = launch.proceed()
            if launch.is_kernel and not foreign:
                self.own[launch.name] = self.own.get(launch.name, 0) + 1
            return result
        except Exception as exc:
            # Raised to the learner's code (not inside an autotuner, which may discard a config that fails).
            if launches.depth() == 1:
                first = str(exc).splitlines()[0] if str(exc) else ""
                self.errors.append(f"`{launch.name}`: {type(exc).__name__}: {first}")
            raise


_PACKAGE_ROOTS: tuple[str, ...] | None = None


def _package_roots() -> tuple[str, ...]:
    """Folders of installed packages and of Python's own library."""
    global _PACKAGE_ROOTS
    if _PACKAGE_ROOTS is None:
        import site
        import sysconfig

        roots = set(site.getsitepackages()) | {site.getusersitepackages()}
        roots |= {sysconfig.get_paths().get(k) for k in ("purelib", "platlib", "stdlib", "platstdlib")}
        _PACKAGE_ROOTS = tuple(sorted(os.path.abspath(r) + os.sep for r in roots if r))
    return _PACKAGE_ROOTS


def from_package(kernel) -> str | None:
    """The file of a Triton kernel's Python function when it lies in an installed package (a library's
    kernel, not one the learner wrote in a cell or a file of their own), else None."""
    fn = getattr(kernel, "fn", None)
    while fn is not None and not hasattr(fn, "__code__") and hasattr(fn, "fn"):
        fn = fn.fn
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    path = os.path.abspath(code.co_filename)
    return path if path.startswith(_package_roots()) else None


def _op_recorder(call: _Call):
    """A TorchDispatchMode that notes torch ops run on the grader's tensors outside kernel launches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def record(func, args, kwargs):
        kwargs = kwargs or {}
        if launches.depth() == 0 and call.input_storages:
            name = func.overloadpacket.__name__
            if name not in ALLOWED_OPS and _touches(call.input_storages, list(args) + list(kwargs.values())):
                call.ops.append(f"aten::{name}")
        return func(*args, **kwargs)

    record_outside_dynamo = torch._disable_dynamo(record, recursive=True)

    class Recorder(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch's hook for a mode that guards itself: without it TorchDispatchMode wraps __torch_dispatch__
            # in torch._disable_dynamo, whose first call imports torch._dynamo. That import took 6-10 s in
            # every fresh check process whose launcher ran one torch op (chapter 6's backward allocates
            # `delta`) on an H100 image without a bytecode cache (assets/results/class-grading).
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            # Dynamo can be compiling only once it is imported (a learner's torch.compile imports it): then
            # this frame stays out of the compile, as torch would have it; before, nothing needs guarding.
            if "torch._dynamo" in sys.modules:
                return record_outside_dynamo(func, args, kwargs)
            return record(func, args, kwargs)

    return Recorder()


def _touches(storages: set, values) -> bool:
    import torch

    for a in values:
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, torch.Tensor):
                try:
                    if t.untyped_storage().data_ptr() in storages:
                        return True
                except Exception:
                    pass
    return False


def _threads() -> set:
    return {t for t in threading.enumerate() if t.is_alive()}


def _torch_internal(t: threading.Thread) -> bool:
    """A daemon thread torch starts for itself: the idle timer of Inductor's compile-worker pool (started
    on any compile in the process, the course's `torch.compile` comparisons included, at a moment no
    learner's call controls)."""
    target = getattr(t, "_target", None)
    owner = getattr(target, "__self__", None)
    module = getattr(type(owner), "__module__", "") if owner is not None else getattr(target, "__module__", "")
    return t.daemon and str(module).startswith("torch._inductor.")


def _processes() -> dict[tuple[int, int], "processes.Proc"]:
    """This process's descendants now, by (pid, start time): a process's number alone may be given again."""
    return {(p.pid, p.started): p for p in processes.descendants(os.getpid())}


def _stray_processes(before: dict) -> list[str]:
    """Processes started since `before` (_processes) that still run: whatever the call started and left, detached
    or not (this process adopts what is orphaned below it: start_watching). A zombie has ended; torch's own
    processes and everything below them are torch's (processes.torchs_own: Inductor's compile workers, started on
    the first compile in the process, the learner's torch.compile included, which the kernel rules reject as
    library-compute on a GPU)."""
    now = _processes()
    torchs = processes.torchs_own(now.values())
    return [p.describe() for key, p in now.items()
            if key not in before and p.alive and p.pid not in torchs and not _ending(p)]


# How long a process whose command line reads empty has to end before it counts as running.
ENDING_S = 0.2


def _ending(proc: "processes.Proc") -> bool:
    """Whether `proc`, alive when listed, was ending: the kernel frees an exiting process's memory, its command line
    with it, before the process becomes a zombie, and a daemon's first half listed as it exits read as "pid N ()" in
    a suite run. Such a process is gone or a zombie within moments; one that cleared its own command line and runs
    on is still a stray."""
    if proc.command() not in ("", "?"):   # "?": gone before its command line was read
        return False
    deadline = time.monotonic() + ENDING_S
    while time.monotonic() < deadline:
        now = processes.read(proc.pid)
        if now is None or now.started != proc.started or not now.alive:
            return True
        time.sleep(0.01)
    return False


def _stray(before: set) -> list[str]:
    new = [t for t in _threads() - before if (not t.daemon or not t.name.startswith("pydevd")) and not _torch_internal(t)]
    for t in new:
        t.join(timeout=0.05)
    return [t.name for t in new if t.is_alive()]


def _l2_limit() -> int:
    if not has_gpu():
        return 0
    try:
        import cupy
        return int(cupy.cuda.runtime.deviceGetLimit(0x06))  # cudaLimitPersistingL2CacheSize
    except Exception:
        return 0


def reset_l2() -> None:
    if not has_gpu():
        return
    try:
        import cupy
        cupy.cuda.runtime.deviceSetLimit(0x06, 0)
    except Exception:
        pass


class GPUBroken(Exception):
    """The GPU reported an error after the learner's code ran: this process's CUDA context is broken."""


class LearnerRaised(Exception):
    """The learner's code raised `exc` (translated by the caller, which knows what was running)."""

    def __init__(self, exc: BaseException):
        super().__init__(str(exc))
        self.exc = exc


def sync_or_broken() -> None:
    try:
        CLOCKS.sync()
    except Exception as exc:
        raise GPUBroken(f"the GPU reported an error after your code ran: {str(exc).splitlines()[0]}") from None


def _facts(call: _Call, threads: set, procs: dict, recorder: "trace.Recorder | None" = None,
           interfered: str | None = None, on_device: bool = True) -> Facts:
    replaced = tampered()
    if interfered:
        replaced = replaced + [interfered]
    device = recorder.trace if recorder is not None else None
    return Facts(launches=list(call.launches), errors=list(call.errors), ops=sorted(set(call.ops)),
                 stray_threads=_stray(threads), stray_processes=_stray_processes(procs), tampered=replaced,
                 l2_limit=_l2_limit() if on_device else 0,
                 tensor_cores=call.tally,
                 recorded=[RecordedKernel(k.name, k.source, tuple(k.options), k.where) for k in call.recorded],
                 own_launches=dict(call.own), package_launches=list(call.package), device=device,
                 configs=list(call.configs), tuned=call.tuned, needs_own_gpu=call.needs_own_gpu)


class _Traced:
    """The device trace around a learner's call, when `wanted`; a failure to start or stop it (which
    only the learner's code can cause once tracing worked in this process) is kept as a fact."""

    def __init__(self, wanted: bool):
        self.recorder = trace.Recorder() if wanted else None
        self.interfered: str | None = None

    def __enter__(self):
        if self.recorder is not None:
            try:
                self.recorder.__enter__()
            except trace.TraceInterfered as exc:
                self.interfered, self.recorder = str(exc), None
        return self

    def __exit__(self, *exc_info):
        if self.recorder is not None:
            try:
                self.recorder.__exit__(*exc_info)
            except trace.TraceInterfered as exc:
                self.interfered, self.recorder = str(exc), None
        return False


class _Counting:
    """A stream that counts what is written to it and passes it on (a print in a timed launcher)."""

    def __init__(self, stream):
        self._stream, self.written = stream, 0

    def write(self, text):
        self.written += len(text) if isinstance(text, str) else 0
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def run_call(fn, args: tuple, kwargs: dict, policy: CallPolicy):
    """Call the learner's `fn` under `policy`; return (result, Facts). Raises LearnerRaised when `fn`
    raised, GPUBroken when the GPU reported an error afterwards."""
    import torch

    CLOCKS.capture()   # (a no-op once watching began: taken then)
    if interpreter.interpreting():
        interpreter.prepare()   # the interpreter's casts as the GPU's, however this process started (once)
    call = _Call(policy, [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)])
    dtypes = [(i, a.dtype) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    threads, procs = _threads(), _processes()
    reset_l2()
    peak = None
    gpu = has_gpu()
    if policy.memory and gpu:
        CLOCKS.sync()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    # Launcher calls and no-op probes are traced on the device; recording (nothing runs) and counting
    # tensor cores (the grader's instrumented copies run in place of the learner's kernels) are not.
    wanted = (policy.launcher or policy.noop) and not (policy.record or policy.count_tensor_cores)
    with _Traced(wanted) as traced:
        try:
            with launches.intercept(call), _op_recorder(call):
                result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the learner's code may raise anything
            if isinstance(exc, KeyboardInterrupt):
                raise
            if not call.needs_own_gpu:
                raise LearnerRaised(exc) from None
            result = None   # stopped where it would have timed: its facts say so, whatever it raised on the way
        sync_or_broken()
    if policy.memory and gpu:
        peak = torch.cuda.max_memory_allocated() - before
    facts = _facts(call, threads, procs, traced.recorder, traced.interfered)
    facts.peak_bytes = peak
    # A tensor the grader handed over must keep its dtype: `out.data = torch.empty(..., dtype=float32)` swaps
    # what `out` is in this process only (the grader's own tensor, across a process boundary, keeps its dtype).
    facts.retyped = [f"argument {i + 1}: {str(old).replace('torch.', '')} -> {str(args[i].dtype).replace('torch.', '')}"
                     for i, old in dtypes if args[i].dtype != old]
    if not plain(result):
        facts.not_plain = describe_type(result)
        result = None
    return result, facts


def run_batch(fn, argsets: list[tuple], kwargs: dict, reps: int, traced: bool = False,
              on_device: bool = True) -> BatchFacts:
    """`reps` calls in a row, rotating through `argsets`, between two CUDA events (the second after a
    device-wide synchronize, so work on any stream falls inside); the host clock without a GPU. With
    `traced`, the device is traced and what the calls print is counted (for the speed report: tracing
    slows the device, so a traced batch's time never makes a verdict). Without `on_device` the GPU is left
    alone (an empty request timed before any learner code, which must not start CUDA in the worker:
    grader.calls.trusted)."""
    import torch

    CLOCKS.capture()
    gpu = on_device and has_gpu()
    inputs = [a for args in argsets for a in args if isinstance(a, torch.Tensor)]
    call = _Call(CallPolicy(), inputs)
    threads, procs = _threads(), _processes()
    if gpu:
        reset_l2()
        CLOCKS.sync()
    per_call = []
    out_streams = (sys.stdout, sys.stderr)
    if traced:
        sys.stdout, sys.stderr = _Counting(sys.stdout), _Counting(sys.stderr)
    # No garbage collection inside a timed batch, as timeit and torch.utils.benchmark (which time torch's
    # side) do: a full collection of a large heap took 16 ms on CI's machine, inside a learner's batch.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with _Traced(traced) as tracer:
            if gpu:
                start, end = CLOCKS.event(enable_timing=True), CLOCKS.event(enable_timing=True)
                CLOCKS.record(start)
            t0 = CLOCKS.perf_counter()
            in_launcher = 0.0   # host time inside the learner's function (traced batches: the report's figure)
            with launches.intercept(call):
                for r in range(reps):
                    call.launches = []
                    try:
                        if traced:
                            t_call = CLOCKS.perf_counter()
                            fn(*argsets[r % len(argsets)], **kwargs)
                            in_launcher += CLOCKS.perf_counter() - t_call
                        else:
                            fn(*argsets[r % len(argsets)], **kwargs)
                    except BaseException as exc:  # noqa: BLE001
                        if isinstance(exc, KeyboardInterrupt):
                            raise
                        raise LearnerRaised(exc) from None
                    per_call.append(tuple(sorted(set(call.launches))))
            if gpu:
                sync_or_broken()
                CLOCKS.record(end)
                CLOCKS.sync()
            host_ms = (CLOCKS.perf_counter() - t0) * 1e3
    finally:
        if collecting:
            gc.enable()
        printed = sum(getattr(s, "written", 0) for s in (sys.stdout, sys.stderr))
        if traced:
            sys.stdout, sys.stderr = out_streams
    # The reader must be the one the grader captured at the moment it is read: a one-shot wrapper that puts
    # the original back when it is called leaves nothing for the watch to see afterwards.
    interfered = tracer.interfered
    if gpu and CLOCKS.elapsed is not _CAPTURED.get("elapsed"):
        interfered = "the grader's event reader (grader.calls.facts.CLOCKS.elapsed), as the batch's time was read"
    event_ms = CLOCKS.elapsed(start, end) if gpu else host_ms
    base = _facts(call, threads, procs, tracer.recorder, interfered, on_device=gpu)
    sets: dict[tuple, int] = {}
    for names in per_call:
        sets[names] = sets.get(names, 0) + 1
    return BatchFacts(**vars(base), min_launches=min(map(len, per_call)) if per_call else 0, event_ms=event_ms,
                      host_ms=host_ms, kernel_sets=list(sets.items()), printed=printed,
                      launcher_ms=in_launcher * 1e3)


def plain(value, depth: int = 0) -> bool:
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
        return all(plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) in (str, int) and plain(v, depth + 1) for k, v in value.items())
    return False


def describe_type(value) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ not in ("builtins",) else t.__qualname__
