"""Device-side accounting: every kernel, copy and fill the GPU executed while some code ran, whoever
issued it (torch, CuPy and the libraries behind it, ctypes, Numba, Inductor, Triton, CUDA graph
replays, other streams and threads), with its name, grid, block, stream and GPU time.

The backend is torch.profiler's Kineto, which drives NVIDIA's CUPTI activity API: CUPTI records
kernels for the whole CUDA context, not only those torch launched (measured on an H100: CuPy's
cuBLAS GEMMs, cuBLAS called through ctypes, `torch.compile`'s Inductor kernels, a library's Triton
kernel, a side stream, another thread and a graph replay all appear; assets/results/timing-integrity/device-accounting/). It
ships inside torch, with torch's own CUPTI, so nothing is added to the install; `cupti-python` would
add a package keyed to the CUDA major version, beside the cupy-cuda12x/13x choice the learner
already makes. Kineto gives each kernel's grid and block only in its Chrome-trace export, so a trace
is saved and read back (a few milliseconds, outside anything timed).

Tracing costs time on the device: on an H100, back-to-back 0.58 ms kernels ran 3.5% slower traced.
So timed batches whose times make a verdict are never traced; the harness traces one extra batch
after timing, for the speed report and the rules (grader.harness.exercise).

Where tracing cannot run (no GPU, a CPU build of torch, `LADDER_TRACE=0`, CUPTI refused), `trace()`
records nothing and says why in one line; the other checks still apply.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field

from .. import config
from .gpu import has_gpu

# Host-side CUDA calls the speed report counts, by what they reveal about a launcher.
SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
              "cuStreamSynchronize", "cuEventSynchronize")
ALLOC_CALLS = ("cudaMalloc", "cudaMallocAsync", "cudaMallocHost", "cudaHostAlloc", "cuMemAlloc", "cuMemAlloc_v2",
               "cudaFree", "cuMemFree_v2")
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch")


@dataclass
class DeviceOp:
    """Work of one name the device executed: a kernel, a copy or a fill, summed over its runs."""
    kind: str                          # "kernel" | "memcpy" | "memset"
    name: str
    count: int = 0
    total_us: float = 0.0
    grid: tuple | None = None          # of its first run
    block: tuple | None = None
    blocks: int = 0                    # thread blocks (Triton's programs) over all its runs, where grids are recorded
    streams: tuple = ()


@dataclass
class DeviceTrace:
    """What the device executed during one traced piece of code, summed by name."""
    ops: list[DeviceOp] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)   # host-side CUDA calls: "sync", "alloc", "launch"
    host_copies: int = 0                                  # copies between host and device
    span_us: float = 0.0                                  # first device start to last device end
    busy_us: float = 0.0                                  # time the device was executing anything (overlaps once)
    note: str | None = None                               # why nothing was traced; None when traced

    @property
    def traced(self) -> bool:
        return self.note is None

    def kernels(self) -> list[DeviceOp]:
        return [op for op in self.ops if op.kind == "kernel"]

    def count(self, name: str) -> int:
        return sum(op.count for op in self.ops if op.kind == "kernel" and op.name == name)


# ------------------------------------------------------------------------------ reading a trace

def _dims(value) -> tuple | None:
    if isinstance(value, (list, tuple)) and value:
        try:
            return tuple(int(v) for v in value)
        except (TypeError, ValueError):
            return None
    return None


def _kind(category: str) -> str | None:
    category = category.lower()
    if category == "kernel":
        return "kernel"
    if category in ("gpu_memcpy", "memcpy"):
        return "memcpy"
    if category in ("gpu_memset", "memset"):
        return "memset"
    if category in ("cuda_runtime", "cuda_driver", "runtime", "driver"):
        return "api"
    return None


def read_chrome_trace(document: dict) -> DeviceTrace:
    """A DeviceTrace from Kineto's Chrome-trace JSON (what `torch.profiler` exports): device work by
    name, and the host-side CUDA calls the speed report counts. Also used on recorded traces in tests."""
    ops: dict[tuple[str, str], DeviceOp] = {}
    calls = {"sync": 0, "alloc": 0, "launch": 0}
    host_copies = 0
    first, last = None, None
    intervals = []
    for event in document.get("traceEvents", []):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        kind = _kind(str(event.get("cat", "")))
        name = str(event.get("name", ""))
        if kind == "api":
            if name in SYNC_CALLS:
                calls["sync"] += 1
            elif name in ALLOC_CALLS:
                calls["alloc"] += 1
            elif name in LAUNCH_CALLS:
                calls["launch"] += 1
            continue
        if kind is None:
            continue
        args = event.get("args") or {}
        dur = float(event.get("dur", 0.0) or 0.0)
        ts = float(event.get("ts", 0.0) or 0.0)
        first = ts if first is None else min(first, ts)
        last = ts + dur if last is None else max(last, ts + dur)
        intervals.append((ts, ts + dur))
        if kind == "memcpy" and any(tag in name for tag in ("HtoD", "DtoH", "Pageable", "Pinned")):
            host_copies += 1
        op = ops.get((kind, name))
        if op is None:
            op = ops[(kind, name)] = DeviceOp(kind, name, grid=_dims(args.get("grid")), block=_dims(args.get("block")))
        op.count += 1
        op.total_us += dur
        grid = _dims(args.get("grid"))
        if grid:
            op.blocks += math.prod(grid)
        stream = args.get("stream")
        if stream is not None and stream not in op.streams:
            op.streams = op.streams + (stream,)
    return DeviceTrace(ops=sorted(ops.values(), key=lambda o: -o.total_us), calls=calls, host_copies=host_copies,
                       span_us=(last - first) if first is not None else 0.0, busy_us=_union(intervals))


def _union(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals: kernels on several streams that overlap count once."""
    total, end = 0.0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


# ------------------------------------------------------------------------------ tracing

_STATE: dict[str, str | None] = {}


def _profiler():
    from torch.autograd import profiler as p

    config_ = p.ProfilerConfig(p.ProfilerState.KINETO, False, False, False, False, False, p._ExperimentalConfig())
    return p, config_, {p.ProfilerActivity.CUDA}


def unavailable() -> str | None:
    """Why device-side tracing cannot run in this process, or None. Decided once per process: the first
    time, a fill kernel is traced and must be seen."""
    if "why" in _STATE:
        return _STATE["why"]
    why = None
    if not config.trace_enabled():
        why = "switched off (LADDER_TRACE=0)"
    elif not has_gpu():
        why = "no GPU"
    else:
        try:
            p, _, activities = _profiler()
            if p.ProfilerActivity.CUDA not in p._supported_activities():
                why = "this torch build has no CUDA profiler (CUPTI)"
        except (ImportError, AttributeError) as exc:
            why = f"torch.profiler's Kineto interface is missing ({type(exc).__name__}: {exc})"
    _STATE["why"] = why
    if why is None:
        import torch

        probe = Recorder(probing=True)
        with probe:
            torch.empty(256, device="cuda").fill_(1.0)
            torch.cuda.synchronize()
        seen = probe.trace.traced and any("Fill" in op.name for op in probe.trace.kernels())
        if not seen:
            _STATE["why"] = probe.trace.note or "CUPTI recorded no kernels (is another profiler attached?)"
    return _STATE["why"]


class TraceInterfered(Exception):
    """Tracing worked in this process before and failed now: something stopped or started a profiler."""


class Recorder:
    """`with Recorder() as r: ...` then `r.trace`: what the device executed inside the block (the block
    must synchronize the device before it ends). Raises TraceInterfered when tracing, which works in
    this process, could not start or stop."""

    def __init__(self, probing: bool = False):
        self.probing = probing
        self.trace = DeviceTrace(note="not traced")
        self._on = False

    def __enter__(self) -> "Recorder":
        why = None if self.probing else unavailable()
        if why is not None:
            self.trace = DeviceTrace(note=why)
            return self
        p, config_, activities = _profiler()
        try:
            p._prepare_profiler(config_, activities)
            p._enable_profiler(config_, activities)
        except RuntimeError as exc:
            if self.probing:
                self.trace = DeviceTrace(note=f"the profiler did not start: {str(exc).splitlines()[0]}")
                return self
            raise TraceInterfered(f"the device trace could not start ({str(exc).splitlines()[0]}); a profiler "
                                  "started by your code may still be running") from None
        self._on = True
        return self

    def __exit__(self, *exc_info) -> None:
        if not self._on:
            return
        self._on = False
        p, _, _ = _profiler()
        try:
            result = p._disable_profiler()
        except RuntimeError as exc:
            if self.probing:
                self.trace = DeviceTrace(note=f"the profiler did not stop: {str(exc).splitlines()[0]}")
                return
            raise TraceInterfered(f"the device trace was stopped from outside the grader "
                                  f"({str(exc).splitlines()[0]})") from None
        handle, path = tempfile.mkstemp(prefix="ladder_trace_", suffix=".json")
        os.close(handle)
        try:
            result.save(path)
            with open(path, encoding="utf-8", errors="replace") as f:
                self.trace = read_chrome_trace(json.load(f))
        except (OSError, ValueError) as exc:
            self.trace = DeviceTrace(note=f"the trace could not be read ({type(exc).__name__}: {exc})")
        finally:
            os.unlink(path)


def reset() -> None:
    """Decide again whether tracing can run (tests, and scripts that compare traced and untraced runs)."""
    _STATE.clear()
