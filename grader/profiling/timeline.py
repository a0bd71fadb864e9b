"""A learner's launcher called back to back under a device trace: how long a call takes by the host's clock,
and how much of that time the GPU was busy.

    python -m grader.profiling.timeline NOTEBOOK --exercise 8b --size '[1, 256, 512]' --report FILE

Nsight Compute answers why one kernel takes its time, but it serialises and replays every kernel, so it
cannot see a GPU that waits for the host between kernels (chapter 8's host-bound block). This process can:
after warm-up calls (Triton compiles and autotunes there), it times CALLS calls with nothing between them,
untraced, on the host's clock; traces another CALLS under torch.profiler's CUPTI tracing
(grader.cuda.trace) for the time the device was busy against the span from its first to its last work;
and times the same call captured once in a CUDA graph and replayed (torch.cuda.graphs). The report, JSON, is
what grader.profiles.recorded joins to a recorded signature (`<rung>.trace.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .target import call_launcher, learner_launcher, size_of

CALLS = 50
WARMUP = 5


def _per_call_us(call, calls: int) -> float:
    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def run(notebook: Path, exercise: str, launcher: str | None, size_text: str | None, calls: int = CALLS) -> dict:
    report: dict = {"notebook": str(notebook), "exercise": exercise, "outcome": "ok", "message": None}
    found = learner_launcher(notebook, exercise, launcher, report)
    if found is None:
        return report
    step, fn = found
    ex = step.exercise

    import torch

    from ..cuda.trace import Recorder, unavailable

    why = unavailable()
    if why:
        return {**report, "outcome": "no-trace", "message": f"the device trace cannot run here: {why}"}
    size = size_of(ex, size_text)
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    try:
        inputs, out = ex.make_inputs(size, gen, "cuda"), ex.make_output(size, "cuda")

        def call():
            return call_launcher(fn, ex, inputs, out, step.trailing)

        # Warm-up on a side stream, as torch.cuda.graphs asks before a capture: Triton compiles and autotunes
        # (which synchronizes), the libraries choose their kernels.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                call()
        torch.cuda.current_stream().wait_stream(side)
        call_us = _per_call_us(call, calls)
        recorder = Recorder()
        with recorder:
            for _ in range(calls):
                call()
            torch.cuda.synchronize()
        trace = recorder.trace
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        graph_us = _per_call_us(graph.replay, calls)
    except NotImplementedError:
        return {**report, "outcome": "not-written", "message": f"`{ex.signature}` is not written yet"}
    except Exception as exc:  # noqa: BLE001 - the learner's launcher may raise anything
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {**report, "outcome": "raised", "message": f"{type(exc).__name__}: {first}"}
    if not trace.traced:
        return {**report, "outcome": "no-trace", "message": f"the device trace recorded nothing: {trace.note}"}
    kernels = sum(op.count for op in trace.kernels())
    report.update(size=ex.describe_size(size), trace={
        "calls": calls, "call_us": round(call_us, 2), "graph_call_us": round(graph_us, 2),
        "busy_us_per_call": round(trace.busy_us / calls, 2), "span_us_per_call": round(trace.span_us / calls, 2),
        "gpu_busy_pct": round(100 * trace.busy_us / trace.span_us, 2) if trace.span_us else None,
        "kernels_per_call": kernels / calls,
        "device": [{"kind": op.kind, "name": op.name[:80], "per_call": op.count / calls,
                    "us_per_call": round(op.total_us / calls, 2)} for op in trace.ops]})
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.profiling.timeline")
    p.add_argument("notebook")
    p.add_argument("--exercise", required=True)
    p.add_argument("--launcher")
    p.add_argument("--size", help="JSON, e.g. [1, 256, 512]; default: the graded size")
    p.add_argument("--calls", type=int, default=CALLS)
    p.add_argument("--report", required=True)
    args = p.parse_args(argv)
    data = run(Path(args.notebook).resolve(), args.exercise, args.launcher, args.size, args.calls)
    Path(args.report).write_text(json.dumps(data, indent=1))
    return 0 if data["outcome"] == "ok" else 3


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
