"""Exploration on a GPU: what torch.profiler's Kineto/CUPTI trace records for kernels issued
by every kind of library, and what tracing costs. Prints JSON lines; not part of grading.

Run: python assets/results/timing-integrity/device-accounting/probe_trace.py > $OUT/probe.jsonl
"""
import ctypes
import glob
import json
import os
import sys
import threading
import time

import torch
from torch.autograd.profiler import (ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig,
                                     _disable_profiler, _enable_profiler, _prepare_profiler)

sys.path.insert(0, os.getcwd())
CFG = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
ACTS = {ProfilerActivity.CUDA}


def emit(**kw):
    print(json.dumps(kw, default=str), flush=True)


def _get(e, name):
    m = getattr(e, name, None)
    try:
        return str(m()) if m is not None else None
    except Exception as exc:
        return f"!{exc!r}"


def trace(label, fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    _prepare_profiler(CFG, ACTS)
    _enable_profiler(CFG, ACTS)
    t1 = time.perf_counter()
    err = None
    try:
        fn()
    except Exception as exc:
        err = repr(exc)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    res = _disable_profiler()
    t3 = time.perf_counter()
    if os.environ.get("TRACES"):
        os.makedirs(os.environ["TRACES"], exist_ok=True)
        res.save(os.path.join(os.environ["TRACES"], f"{label}.json"))
    evs = []
    for e in res.events():
        evs.append({"name": e.name()[:160], "type": _get(e, "activity_type"), "dev": _get(e, "device_type"),
                    "res": _get(e, "device_resource_id"), "meta": str(_get(e, "metadata_json"))[:300],
                    "dur_ns": _get(e, "duration_ns"), "corr": _get(e, "correlation_id"),
                    "thread": _get(e, "start_thread_id"), "start_ns": _get(e, "start_ns")})
    emit(label=label, error=err, start_ms=(t1 - t0) * 1e3, body_ms=(t2 - t1) * 1e3, stop_ms=(t3 - t2) * 1e3,
         n=len(evs), events=evs[:40])
    return evs


def main():
    emit(label="kineto_event_methods", methods=[m for m in dir(torch._C._autograd._KinetoEvent) if not m.startswith("_")])
    import cupy
    import triton
    import triton.language as tl
    from grader.cuda.kernels import load_kernel

    n = 1 << 20
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.empty_like(a)
    vadd = load_kernel('extern "C" __global__ void vadd(const float* a, const float* b, float* c, long long n)'
                       '{ long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }',
                       "vadd")
    import numpy as np
    trace("load_kernel", lambda: vadd(((n + 255) // 256,), (256,), (a, b, out, np.int64(n))))

    @triton.jit
    def tadd(x, y, z, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(z + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

    tadd[(n // 1024,)](a, b, out, n, BLOCK=1024)
    trace("triton", lambda: tadd[(n // 1024,)](a, b, out, n, BLOCK=1024))

    A = torch.randn(512, 512, device="cuda")
    B = torch.randn(512, 512, device="cuda")
    trace("cupy_matmul", lambda: cupy.from_dlpack(A) @ cupy.from_dlpack(B))
    trace("cupy_fill_copy", lambda: (cupy.zeros(100), cupy.full(100, 3.0), cupy.from_dlpack(A).copy(), cupy.from_dlpack(A).astype(cupy.float16)))
    trace("torch_fill_copy", lambda: (torch.zeros(100, device="cuda"), torch.full((100,), 2.0, device="cuda"),
                                      A.t().contiguous(), out.copy_(a), out.fill_(1.5), A.cpu(), torch.arange(10, device="cuda")))

    f = torch.compile(lambda a, x, b: torch.relu(a * x + b))
    f(a, b, a)
    trace("torch_compile", lambda: f(a, b, a))

    libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "**", "libcublas.so*"), recursive=True)
    emit(label="cublas_libs", libs=libs)
    if libs:
        lib = ctypes.CDLL(sorted(libs)[0])
        handle = ctypes.c_void_p()
        lib.cublasCreate_v2(ctypes.byref(handle))
        C = torch.empty(512, 512, device="cuda")
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)

        def gemm():
            rc = lib.cublasSgemm_v2(handle, 0, 0, 512, 512, 512, ctypes.byref(alpha), ctypes.c_void_p(A.data_ptr()), 512,
                                    ctypes.c_void_p(B.data_ptr()), 512, ctypes.byref(beta), ctypes.c_void_p(C.data_ptr()), 512)
            assert rc == 0, rc
        trace("ctypes_cublas", gemm)

    s = torch.cuda.Stream()

    def side():
        with torch.cuda.stream(s):
            torch.mm(A, B)
        tadd[(n // 1024,)](a, b, out, n, BLOCK=1024)
    trace("side_stream", side)

    def in_thread():
        t = threading.Thread(target=lambda: torch.mm(A, B))
        t.start()
        t.join()
    trace("other_thread", in_thread)

    g = torch.cuda.CUDAGraph()
    static = torch.empty(512, 512, device="cuda")
    with torch.cuda.stream(s):
        torch.mm(A, B, out=static)
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            torch.mm(A, B, out=static)
    trace("graph_replay", lambda: g.replay())

    try:
        from torch.sparse._triton_ops import bsr_dense_mm
        Ah = torch.randn(256, 256, device="cuda", dtype=torch.float16)
        Bh = torch.randn(256, 256, device="cuda", dtype=torch.float16)
        bsr = Ah.to_sparse_bsr((32, 32))
        bsr_dense_mm(bsr, Bh)
        trace("torch_sparse_triton", lambda: bsr_dense_mm(bsr, Bh))
    except Exception as exc:
        emit(label="torch_sparse_triton", error=repr(exc))

    try:
        import numba  # noqa: F401
        emit(label="numba", available=True)
    except Exception as exc:
        emit(label="numba", error=repr(exc))

    def sync_print():
        vadd(((n + 255) // 256,), (256,), (a, b, out, np.int64(n)))
        torch.cuda.synchronize()
        print("debug", file=sys.stderr)
    trace("sync_print", sync_print)

    # Cost of tracing: a 2^27-element vector add, and 1000 tiny launches.
    big = 1 << 27
    x, y, z = (torch.randn(big, device="cuda") for _ in range(3))
    launch = lambda: vadd(((big + 255) // 256,), (256,), (x, y, z, np.int64(big)))  # noqa: E731
    tiny = lambda: vadd((1,), (32,), (x, y, z, np.int64(32)))  # noqa: E731

    def timed(fn, reps, traced):
        torch.cuda.synchronize()
        if traced:
            _prepare_profiler(CFG, ACTS)
            _enable_profiler(CFG, ACTS)
        s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s0.record()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        e0.record()
        e0.synchronize()
        ms = s0.elapsed_time(e0)
        if traced:
            t = time.perf_counter()
            r = _disable_profiler()
            k = sum(1 for e in r.events() if "CUDA" in str(e.device_type()))
            return ms, (time.perf_counter() - t) * 1e3, k
        return ms, 0.0, 0
    for label, fn, reps in (("vadd_2^27", launch, 40), ("tiny", tiny, 2000)):
        rows = []
        for i in range(12):
            traced = i % 2 == 1
            ms, stop_ms, k = timed(fn, reps, traced)
            rows.append({"traced": traced, "ms_per_call": ms / reps, "stop_ms": stop_ms, "kernels": k})
        emit(label=f"overhead_{label}", rows=rows)


if __name__ == "__main__":
    main()
