"""A probe of where a timed request's time goes, in every process of a grading (the verifier, the worker):
when LADDER_PROBE_DIR is set, each process that imports this (it is on PYTHONPATH) logs the start and end of
the functions named below, with time.perf_counter_ns (CLOCK_MONOTONIC: one clock for every process), to
LADDER_PROBE_DIR/probe-PID.log.

It uses sys.monitoring (PEP 669) rather than wrapping the functions: nothing of the grader is replaced, so the
grader's own watch (grader.calls.facts.Watch) sees what it always sees, and functions not named cost one
callback each, once (DISABLE switches the event off at that code location).
"""
import os
import sys
import threading
import time

WANTED = {
    # the asking side
    "Batch._timed_request", "Batch._empty_request", "Batch.timed_batch", "BatchBackend.flush", "BatchBackend.times_ms",
    "RemoteFunction._timed", "WorkerHandle.request", "WorkerHandle._receive", "safe_loads", "LocalFunction._timed",
    "_TimedSets.after_batch", "_TimedSets.poison_all", "WorkerHandle._receive.<locals>.read", "ClockSpan.add",
    "measure_speed", "read",
    # the worker
    "Worker.batch", "run_batch", "_facts", "tampered", "Watch.changed", "_stray", "reset_l2", "_l2_limit",
    "sync_or_broken", "_Clocks.sync", "_Clocks.capture", "_threads", "Worker.serve",
    # torch and multiprocessing
    "Event.record", "Event.elapsed_time", "Connection.send", "Connection.recv", "Connection.recv_bytes",
    "Connection._recv_bytes", "Connection._send_bytes", "ForkingPickler.dumps", "reduce_tensor", "rebuild_cuda_tensor",
    "synchronize",
}
DIR = os.environ.get("LADDER_PROBE_DIR")
FLUSH_AT = {"Worker.batch", "Batch._timed_request", "measure_speed"}

if DIR and hasattr(sys, "monitoring"):
    mon = sys.monitoring
    TOOL = mon.PROFILER_ID
    _log = open(os.path.join(DIR, f"probe-{os.getpid()}.log"), "a", buffering=1 << 16)
    _now = time.perf_counter_ns
    _main = threading.main_thread

    def _wanted(code) -> bool:
        return code.co_qualname in WANTED and ("grader" in code.co_filename or "torch" in code.co_filename
                                               or "multiprocessing" in code.co_filename)

    def _start(code, offset):
        if not _wanted(code):
            return mon.DISABLE
        t = threading.current_thread()
        _log.write(f"{_now()} > {code.co_qualname} {'' if t is _main() else t.name}\n")

    def _end(code, offset, value):
        if not _wanted(code):
            return mon.DISABLE
        name = code.co_qualname
        extra = ""
        if name == "run_batch":   # what the worker's events and host clock said
            extra = f" events={value.event_ms:.3f} host={value.host_ms:.3f}"
        elif name == "Batch._timed_request":
            facts, wall = value
            extra = f" wall={wall:.3f} events={facts.event_ms:.3f}"
        _log.write(f"{_now()} < {name}{extra}\n")
        if name in FLUSH_AT:   # a worker ends with os._exit: no atexit
            _log.flush()

    def _unwind(code, offset, exc):
        if _wanted(code):
            _log.write(f"{_now()} < {code.co_qualname} raised\n")

    mon.use_tool_id(TOOL, "ladder-probe")
    mon.register_callback(TOOL, mon.events.PY_START, _start)
    mon.register_callback(TOOL, mon.events.PY_RETURN, _end)
    mon.register_callback(TOOL, mon.events.PY_UNWIND, _unwind)
    mon.set_events(TOOL, mon.events.PY_START | mon.events.PY_RETURN | mon.events.PY_UNWIND)
    import atexit
    atexit.register(_log.flush)
