"""Device-side accounting (grader.cuda.trace) read from traces recorded on an H100 (tests/cuda/traces/,
made by assets/results/timing-integrity/device-accounting/probe_trace.py), and what tracing says where it cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.cuda import trace

TRACES = Path(__file__).parent / "traces"


def recorded(name: str) -> trace.DeviceTrace:
    return trace.read_chrome_trace(json.loads((TRACES / f"{name}.json").read_text()))


def test_a_learner_kernel_is_recorded_with_its_grid_block_stream_and_time():
    t = recorded("load_kernel")
    (vadd,) = t.kernels()
    assert vadd.name == "vadd" and vadd.count == 1
    assert vadd.grid == (4096, 1, 1) and vadd.block == (256, 1, 1) and vadd.streams == (7,)
    assert 1.0 < vadd.total_us < 100.0
    assert t.calls["launch"] == 1 and t.calls["sync"] == 1
    assert t.traced and t.busy_us == pytest.approx(vadd.total_us, rel=1e-3)


def test_library_kernels_from_ctypes_cupy_threads_and_graphs_are_all_recorded():
    for name in ("ctypes_cublas", "cupy_matmul", "other_thread", "graph_replay"):
        kernels = recorded(name).kernels()
        assert any("xmma_gemm" in k.name for k in kernels), (name, [k.name for k in kernels])


def test_fills_copies_and_memsets_are_told_apart():
    t = recorded("cupy_fill_copy")
    kinds = {op.kind for op in t.ops}
    assert kinds == {"memset", "kernel"}
    assert t.count("cupy_copy__float32_float16") == 1


def test_overlapping_work_counts_once_in_busy_time():
    doc = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "ts": 0.0, "dur": 10.0, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 5.0, "dur": 10.0, "args": {"stream": 14}},
        {"ph": "X", "cat": "kernel", "name": "a", "ts": 30.0, "dur": 5.0, "args": {"stream": 7}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 40.0, "dur": 1.0},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 41.0, "dur": 1.0},
    ]}
    t = trace.read_chrome_trace(doc)
    assert t.busy_us == pytest.approx(15.0 + 5.0 + 1.0)
    assert t.span_us == pytest.approx(41.0)
    assert t.count("a") == 2 and t.host_copies == 1 and t.calls["sync"] == 1


def test_without_a_gpu_tracing_says_why_in_one_line(monkeypatch):
    monkeypatch.setattr(trace, "has_gpu", lambda: False)
    trace.reset()
    try:
        with trace.Recorder() as r:
            pass
        assert not r.trace.traced and r.trace.note == "no GPU"
    finally:
        trace.reset()


def test_tracing_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("LADDER_TRACE", "0")
    trace.reset()
    try:
        assert "LADDER_TRACE=0" in trace.unavailable()
    finally:
        trace.reset()
