"""Issue 19: why the Hopper rung reaches 1.03-1.06x torch.mm at 4096^3 under do_bench but 0.87-0.94x
through the graded path (`measure_speed`), while the two agree at 8192^3. Diagnosis only: nothing in
the notebook, the grader or bars.toml changes.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/hopper_gap.py --out DIR          # on the H100
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/hopper_gap.py --out DIR --dry    # CPU plumbing
    PYTHONPATH=/tmp/t36:$PWD:$PWD/tests python3 assets/results/issue19/hopper_gap.py --out DIR --xcompile
                                        # CPU: the host-descriptor kernel cross-compiled for sm_90

Hypotheses, and the measurements that separate them:
(a) host launch overhead: the launcher's Python (device properties, set_allocator, the autotuner, the JIT's
    binder, the descriptors' scratch allocation) plus the grader's launch interception in timed batches
    costs as much as the 0.19 ms kernel, so back-to-back calls starve the GPU; do_bench's 256 MB L2-flush
    memset between calls (~0.09 ms of GPU work) hides it.
    -> host time per call (perf_counter around N calls, no sync) against the GPU time of the same batch
       (CUDA events) and against the kernel alone (device trace); the same back-to-back calls captured in a
       CUDA graph (no host in the loop); launcher variants with less host work.
(b) L2 state: measure_speed times torch.mm on one input set and the candidate rotating two (A and B are
    32 MiB each at 4096^3, the H100's L2 is 50 MiB), while do_bench flushes L2 before every call.
    -> per-call events with and without the flush; back-to-back with one and with two sets; measure_speed
       replicas with the sets changed one side at a time.
(c) batch length, clocks, power: -> replicas with 5 and 80 ms batches; SM clock and power sampled by
    nvidia-smi (a separate process) while each contender runs back-to-back and do_bench-style.
(d) measure_speed's accounting (the seam, poisoning and re-checks between batches, the flush before each
    batch): -> replicas with each removed, and torch.mm timed through the same seam.
Whether the grader's device trace (Kineto/CUPTI, used by every checked call and the traced batches)
leaves launches slower for the rest of the process: host times and do_bench are taken before anything
is traced ("pristine") and again after the graded runs.

Parts, in order, with their expected time on an H100 (Triton 3.6; about 120-140 s in all, most of it
compiling and the graded runs):
 1. environment: GPU, versions, CPU model, nvidia-smi clocks and power limit                      (~3 s)
 2. launchers: the notebook's `matmul_tma` (solution cells `matmul-solution`, `hopper-solution`),
    autotuned at 4096^3 and 8192^3 by a first call (its configurations compiled and timed by Triton's
    autotuner), then two variants with less host work, run with the configuration the autotuner chose
    at each size: `fixed` (the same JIT kernel launched directly: no autotuner, grid and NUM_SMS
    precomputed, allocator set once) and `hostdesc` (a copy of the kernel that takes host-side
    TensorDescriptors, cached per tensor: no scratch allocation, no descriptor built in the kernel); each
    compared with an fp32 torch.mm (max difference) before it is timed                             (~25 s)
 3. timing modes, pristine (nothing traced yet), at 4096^3 (--repeats rounds, default 3) and 8192^3 (1
    round), torch.mm and each launcher interleaved: do_bench as the sweep calls it (warmup 20, rep 80,
    median); per-call CUDA events with the same L2 flush (should match do_bench); per-call events
    without a flush; one back-to-back batch of ~20 ms as BatchBackend times it, one input set, then two
    rotated; the two-set batch through the grader's own `run_batch` (launch interception, gc off); and
    the two-set back-to-back calls captured in one CUDA graph and replayed (no host between kernels) (~10 s)
 4. host time per call, pristine: each launcher and torch.mm, 60 calls at 4096^3, plain and under the
    handler the grader's `run_batch` pushes, host time (no sync) against the GPU time of the same batch;
    and the shipped launcher's pieces (stride checks, device properties, set_allocator, the descriptor
    scratch, host descriptors, the interception, the autotuner's and the JIT's own launch paths)     (~3 s)
 5. correctness through the chapter's own check (`check_correctness(ch05.HOPPER, ...)`: float64
    reference, poisoned output, guard bands) for the three launchers: two odd shapes, 4096^3, 8192^3 (~6 s)
 6. `measure_speed` exactly as the Hopper stretch cell calls it (ch05.HOPPER, bar 5a-hopper, 4096^3;
    and size=8192^3): the shipped launcher --graded-runs times at 4096^3 (default 3) and once at 8192^3,
    `fixed` and `hostdesc` once at 4096^3, `hostdesc` once at 8192^3; each with its traced batch's kernel
    time, device busy time and launcher host time per call (the first run also measures the GPU's
    ceilings if they are not cached, ~5 s)                                                         (~30 s)
 7. after tracing: part 4's host times, and do_bench / back-to-back / run_batch for torch.mm and the
    shipped launcher once more                                                                     (~4 s)
 8. measure_speed replicas at 4096^3 (--replica-repeats rounds, default 2), built from the grader's own
    pieces (`_TimedSets`, `LearnerFunction.batch`, `timing.compare`, `BatchBackend`) with one factor
    changed at a time (REPLICAS: input sets on either side, the after-batch poisoning and re-check, the
    guard-banded outputs, the seam on either side, batch length, the flush, the two variant launchers),
    5 to 7 interleaved rounds each; the graded replica and one-set variant once at 8192^3         (~40 s)
 9. kernel time alone from the grader's device trace (grader.cuda.trace, Kineto): 50 back-to-back calls
    at 4096^3 (one set, two sets) and 10 at 8192^3, torch.mm and each launcher                     (~4 s)
10. clocks and power: nvidia-smi queried from a thread while torch.mm and the shipped launcher each run
    0.6 s of back-to-back batches and 0.6 s do_bench-style (flush, call), with the idle time before  (~6 s)
Then DIR/hopper_gap.json (every figure) and DIR/hopper_gap.md (the tables, and a findings section that
puts each hypothesis's figures side by side; the lead decides), and the Markdown is printed. Every part
catches, prints and records its own errors and the script goes on; a part that would start after --budget
seconds (default 200) is skipped and the JSON says so.

--dry: no GPU. The Triton interpreter runs the three launchers at tiny sizes (130x264x72 and 64^3 stand for
4096^3 and 8192^3), the grader's correctness check runs on the CPU, every timing runs on the host clock
(nothing is measured: it shows the plumbing), measure_speed says "no GPU", and the GPU-only pieces (CUDA
graphs, the device trace, nvidia-smi) say why they did not run.
--xcompile: no GPU. The host-descriptor kernel compiled for sm_90 by the Triton on the path (put Triton 3.6
first on PYTHONPATH to compile as the H100 will), at 4096^3, for each of the notebook's TMA configurations.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DRY = "--dry" in sys.argv
XCOMPILE = "--xcompile" in sys.argv
if DRY:  # before torch, Triton or the grader are imported: they read these once
    os.environ["TRITON_INTERPRET"] = "1"
if DRY or XCOMPILE:
    os.environ["LADDER_FORCE_NO_GPU"] = "1"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "assets" / "results" / "issue19")]

import torch
import triton
import triton.language as tl
from parts import Record

from grader.chapters import ch05
from grader.cuda import launches, trace
from grader.harness import correctness, timing
from grader.harness.exercise import _TimedSets, check_correctness, measure_speed
from grader.isolation import facts as gather
from grader.isolation.messages import CallPolicy
from grader.isolation.seam import as_learner

DEV = "cpu" if DRY else "cuda"
BAR = "5a-hopper"
S4, S8 = ((130, 264, 72), (64, 64, 64)) if DRY else ch05.SPEED_SIZES_HOPPER
CHECK_SIZES = list(ch05.HOPPER.cpu_sizes) if DRY else [(129, 264, 72), (1000, 1024, 328), S4, S8]
TARGET_MS = 1.0 if DRY else 20.0          # a batch's length, as BatchBackend's default
NAMES = ("shipped", "fixed", "hostdesc")  # the launchers compared with torch.mm
TORCH = "torch.mm"


def sz(size) -> str:
    return "x".join(map(str, size))


# ------------------------------------------------------------------------------------ the variant kernel

@triton.jit
def matmul_tma_hostdesc_kernel(a_desc, b_desc, c_desc, M, N, K,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               GROUP_M: tl.constexpr, SPLIT_STORE: tl.constexpr, NUM_SMS: tl.constexpr):
    # The shipped Hopper kernel with its three descriptors made on the host (triton.tools.tensor_descriptor)
    # and passed as arguments: no global scratch for descriptors, nothing written and fenced per program.
    STORE_N: tl.constexpr = BLOCK_N // 2 if SPLIT_STORE else BLOCK_N
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    for tile in tl.range(tl.program_id(0), grid_m * grid_n, NUM_SMS):
        first_m = (tile // per_group) * GROUP_M
        rows = min(grid_m - first_m, GROUP_M)
        within = tile % per_group
        row0 = (first_m + within % rows) * BLOCK_M
        col0 = (within // rows) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([row0, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, col0])
            acc = tl.dot(a, b, acc)
        if SPLIT_STORE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, STORE_N)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([row0, col0], left.to(tl.float16))
            c_desc.store([row0, col0 + STORE_N], right.to(tl.float16))
        else:
            c_desc.store([row0, col0], acc.to(tl.float16))


# ------------------------------------------------------------------------------------ small helpers

def sync() -> None:
    if not DRY:
        torch.cuda.synchronize()


_FLUSH: list = []


def flush() -> None:
    """do_bench's L2 flush: zero 256 MB (no synchronize, as do_bench between its calls)."""
    if DRY:
        return
    if not _FLUSH:
        _FLUSH.append(torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda"))
    _FLUSH[0].zero_()


def event_pair():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


@contextlib.contextmanager
def no_gc():
    """As the grader's timed batches (and timeit) run: no collection inside a timed loop."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def input_set(size):
    gen, _ = correctness.fresh_generator(DEV)
    a, b = ch05._inputs(size, gen, DEV)
    return a, b, torch.empty(size[0], size[1], device=DEV, dtype=torch.float16)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def r4(x):
    return None if x is None else round(float(x), 4)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


# ------------------------------------------------------------------------------------ launchers

def torch_mm(a, b, out):
    torch.mm(a, b, out=out)


def jit_of(kernel):
    from triton.runtime.autotuner import Autotuner, Heuristics

    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


def chosen_config(tuner, size):
    """The configuration Triton's autotuner kept for (M, N, K) = size; its only one if it has one."""
    for key, cfg in (getattr(tuner, "cache", None) or {}).items():
        if tuple(key[:3]) == tuple(size):
            return cfg
    return tuner.configs[0]


def sm_count() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count if not DRY else 4


class Launchers:
    """torch.mm, the notebook's `matmul_tma` and the two variants with less host work."""

    def __init__(self):
        from submissions.build import launchers

        self.ns = launchers("ch05", "correct", ["matmul-solution", "hopper-solution"])
        self.tuner = self.ns["matmul_tma_kernel"]
        self.jit = jit_of(self.tuner)
        self.sms = sm_count()
        self.configs: dict = {}        # (M, N, K) -> triton.Config the autotuner chose; "default"
        self.descs: dict = {}          # hostdesc's descriptor cache
        self.fns = {TORCH: torch_mm, "shipped": self.ns["matmul_tma"], "fixed": self._fixed(),
                    "hostdesc": self._hostdesc()}
        self.ok = {TORCH: True}        # launchers whose first results matched torch.mm

    def config_for(self, size):
        return self.configs.get(tuple(size)) or self.configs.get("default") or self.tuner.configs[0]

    def _plan(self, size):
        kw = self.config_for(size).all_kwargs()
        tiles = triton.cdiv(size[0], kw["BLOCK_M"]) * triton.cdiv(size[1], kw["BLOCK_N"])
        return (min(self.sms, tiles),), kw

    def _fixed(self):
        jit, sms, plans = self.jit, self.sms, {}
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEV))

        def matmul_tma_fixed(a, b, out):
            M, K = a.shape
            N = b.shape[1]
            plan = plans.get((M, N, K))
            if plan is None:
                plan = plans[(M, N, K)] = self._plan((M, N, K))
            grid, kw = plan
            jit[grid](a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0), NUM_SMS=sms, **kw)

        matmul_tma_fixed.plans = plans
        return matmul_tma_fixed

    def _hostdesc(self):
        from triton.tools.tensor_descriptor import TensorDescriptor

        sms, plans, descs = self.sms, {}, self.descs

        def desc(t, block):
            # A descriptor holds the tensor, its shape, strides and block: the same pointer, shape and
            # strides describe the same memory, and the cached tensor keeps that memory from being reused.
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), block)
            d = descs.get(key)
            if d is None:
                if len(descs) >= 48:
                    descs.clear()
                d = descs[key] = TensorDescriptor(t, list(t.shape), list(t.stride()), list(block))
            return d

        def matmul_tma_hostdesc(a, b, out):
            M, K = a.shape
            N = b.shape[1]
            plan = plans.get((M, N, K))
            if plan is None:
                grid, kw = self._plan((M, N, K))
                bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
                plan = plans[(M, N, K)] = (grid, kw, (bm, bk), (bk, bn), (bm, bn // 2 if kw["SPLIT_STORE"] else bn))
            grid, kw, a_block, b_block, c_block = plan
            matmul_tma_hostdesc_kernel[grid](desc(a, a_block), desc(b, b_block), desc(out, c_block), M, N, K,
                                             NUM_SMS=sms, **kw)

        matmul_tma_hostdesc.plans = plans
        return matmul_tma_hostdesc

    def timed(self) -> list[str]:
        """torch.mm first, then the launchers that were right in part 2."""
        return [TORCH] + [n for n in NAMES if self.ok.get(n)]

    def forget(self) -> None:
        self.descs.clear()


L: Launchers | None = None


def after_part() -> None:
    if L is not None:
        L.forget()
    gc.collect()
    if not DRY:
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------ 1. environment

def smi(query: str) -> str | None:
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi: {first_line(exc)}"
    return r.stdout.strip() if r.returncode == 0 else f"nvidia-smi exit {r.returncode}: {r.stderr.strip()[:200]}"


def environment() -> dict:
    from grader.cuda.gpu import gpu_info, versions

    info = gpu_info()
    env = {"versions": versions(), "triton": triton.__version__, "torch": torch.__version__,
           "gpu": info.name if info else None, "capability": list(info.capability) if info else None,
           "sm_count": info.sm_count if info else None, "l2_bytes": info.l2_bytes if info else None,
           "cpu_count": os.cpu_count(), "sizes": [list(S4), list(S8)],
           "env": {k: os.environ.get(k) for k in ("CUDA_LAUNCH_BLOCKING", "LADDER_TRACE", "TEARDOWN_CUPTI",
                                                   "TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES")}}
    try:
        env["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                                 if ln.startswith("model name")), None)
    except OSError:
        env["cpu_model"] = None
    if not DRY:
        env["smi"] = smi("name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,"
                         "temperature.gpu,persistence_mode")
    print(json.dumps(env, indent=1), flush=True)
    return env


# ------------------------------------------------------------------------------------ 2. launchers

def load_and_warm() -> dict:
    """Build the launchers; autotune the shipped one at both sizes; first-call times and results."""
    global L
    L = Launchers()
    launches.install_triton()   # the grader wraps Triton's launch once per process: every timing below sees it
    out = {"first_call_s": {}, "max_diff_vs_fp32": {}, "chosen": {}}
    for size in (S4, S8):
        a, b, c = input_set(size)
        ref = torch.mm(a.float(), b.float())
        for name in ("shipped", "fixed", "hostdesc"):
            key = f"{name} {sz(size)}"
            try:
                c.fill_(float("nan"))
                t0 = time.time()
                L.fns[name](a, b, c)
                sync()
                out["first_call_s"][key] = round(time.time() - t0, 2)
                diff = float((c.float() - ref).abs().max())
                out["max_diff_vs_fp32"][key] = diff
                ok = diff <= 0.05   # fp16 rounding of O(1) outputs; NaN (never written) fails
                L.ok[name] = L.ok.get(name, True) and ok
                print(f"  {key}: first call {out['first_call_s'][key]} s, max |diff| vs fp32 {diff:.4g}"
                      f"{'' if ok else '  WRONG: not timed'}", flush=True)
            except Exception as exc:  # noqa: BLE001 - record, drop this launcher, go on
                L.ok[name] = False
                out["first_call_s"][key] = first_line(exc)
                print(f"  {key}: {first_line(exc)}", flush=True)
            if name == "shipped":   # the variants run what the autotuner chose at this size
                L.configs[tuple(size)] = chosen_config(L.tuner, size)
                L.configs.setdefault("default", L.configs[tuple(size)])
                out["chosen"][sz(size)] = str(L.configs[tuple(size)])
                print(f"  autotuner's choice at {sz(size)}: {L.configs[tuple(size)]}", flush=True)
        del a, b, c, ref
    timings = getattr(L.tuner, "configs_timings", None) or {}
    out["autotuner_timings_last_shape_ms"] = {str(k): str(v) for k, v in timings.items()}
    out["tuned_configs"] = [str(c) for c in L.tuner.configs]
    out["timed"] = L.timed()
    return out


# ------------------------------------------------------------------------------------ 3. timing modes

def per_call_ms(fn, args, n: int, flush_each: bool) -> float:
    """Median of per-call CUDA events, optionally with do_bench's flush before every call."""
    if DRY:
        t0 = time.perf_counter()
        fn(*args)
        return (time.perf_counter() - t0) * 1e3
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    fn(*args)
    sync()
    with no_gc():
        for i in range(n):
            if flush_each:
                flush()
            starts[i].record()
            fn(*args)
            ends[i].record()
    sync()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def batch_ms(fn, argsets, n: int) -> float:
    """One batch of n back-to-back calls as BatchBackend._local times it (flush, sync, events, the end
    event after a device-wide synchronize), rotating through argsets; ms per call."""
    flush()
    sync()
    with no_gc():
        if DRY:
            t0 = time.perf_counter()
            for i in range(n):
                fn(*argsets[i % len(argsets)])
            return (time.perf_counter() - t0) * 1e3 / n
        start, end = event_pair()
        start.record()
        for i in range(n):
            fn(*argsets[i % len(argsets)])
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
    return start.elapsed_time(end) / n


def seam_batch_ms(fn, argsets, n: int) -> float:
    """One batch through the grader's own timed-batch code (grader.isolation.facts.run_batch: launch
    interception, gc off, events, the end event after a synchronize); ms per call. The rules are not
    applied: torch.mm launches none of the learner's kernels."""
    flush()
    sync()
    return gather.run_batch(fn, [tuple(a) for a in argsets], {}, n).event_ms / n


def graph_ms(fn, argsets, n: int, replays: int = 3) -> float:
    """The same n back-to-back calls (rotating argsets) captured in one CUDA graph and replayed: no host
    work between the kernels; ms per call."""
    if DRY:
        raise RuntimeError("no GPU: no CUDA graph")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(2):
            fn(*argsets[i % len(argsets)])
    torch.cuda.current_stream().wait_stream(side)
    sync()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(n):
            fn(*argsets[i % len(argsets)])
    graph.replay()
    flush()
    sync()
    start, end = event_pair()
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / (replays * n)
    del graph
    return ms


def do_bench_ms(fn, args) -> float:
    if DRY:
        return per_call_ms(fn, args, 1, False)
    from triton.testing import do_bench
    return float(do_bench(lambda: fn(*args), warmup=20, rep=80, return_mode="median"))


MODES = [  # (key, what, function(fn, sets, n) -> ms per call)
    ("do_bench", "triton do_bench (warmup 20, rep 80, median), L2 flushed before every call: as the sweep",
     lambda fn, sets, n: do_bench_ms(fn, sets[0])),
    ("events+flush", "per-call CUDA events, L2 flushed before every call (this script's do_bench)",
     lambda fn, sets, n: per_call_ms(fn, sets[0], n, True)),
    ("events", "per-call CUDA events, no flush, calls back to back",
     lambda fn, sets, n: per_call_ms(fn, sets[0], n, False)),
    ("b2b 1 set", "one ~20 ms batch of back-to-back calls (BatchBackend's events), one input set",
     lambda fn, sets, n: batch_ms(fn, sets[:1], n)),
    ("b2b 2 sets", "the same batch rotating two input sets (as measure_speed gives the candidate)",
     lambda fn, sets, n: batch_ms(fn, sets[:2], n)),
    ("run_batch 2 sets", "the same two-set batch through the grader's run_batch (interception, gc off)",
     lambda fn, sets, n: seam_batch_ms(fn, sets[:2], n)),
    ("graph 2 sets", "the two-set back-to-back calls captured in one CUDA graph, replayed: no host between kernels",
     lambda fn, sets, n: graph_ms(fn, sets[:2], n)),
]


def calls_for(size) -> int:
    if DRY:
        return 2
    return 100 if size == S4 else 12     # ~20 ms of kernels, as a graded batch


def timing_modes(rec: Record, tag: str, sizes_repeats, names=None, modes=None) -> dict:
    """Every mode for torch.mm and the launchers, interleaved (launcher by launcher, mode by mode) in
    `repeats` rounds per size; adds ratio rows. Returns {size: {mode: {launcher: [ms, ...]}}}."""
    names = names or L.timed()
    modes = [m for m in MODES if modes is None or m[0] in modes]
    result, errors = {}, {}
    for size, repeats in sizes_repeats:
        sets = [input_set(size) for _ in range(2)]
        n = calls_for(size)
        got = result[sz(size)] = {m[0]: {name: [] for name in names} for m in modes}
        for _ in range(repeats):
            for name in names:
                for key, _, run in modes:
                    try:
                        got[key][name].append(r4(run(L.fns[name], sets, n)))
                    except Exception as exc:  # noqa: BLE001
                        errors[f"{sz(size)} {key} {name}"] = first_line(exc)
                        got[key][name].append(None)
        for key, what, _ in modes:
            for name in names[1:]:
                add_ratio_rows(rec, f"{tag}: {key}", what, size, name, got[key][name], got[key][TORCH])
        del sets
    for k, v in errors.items():
        print(f"  {k}: {v}", flush=True)
    return {"ms": result, "errors": errors, "calls_per_batch": {sz(s): calls_for(s) for s, _ in sizes_repeats}}


def add_ratio_rows(rec: Record, part: str, what: str, size, name: str, ms: list, torch_ms: list, **extra) -> None:
    ratios = [r4(t / m) if (t and m) else None for t, m in zip(torch_ms, ms)]
    row = {"part": part, "what": what, "size": sz(size), "launcher": name, "ratios": ratios, "ms": ms,
           "torch_ms": torch_ms, **extra}
    rec.data["rows"].append(row)
    good = [r for r in ratios if r is not None]
    if good:
        print(f"  {part} | {sz(size)} | {name}: {med(good):.3f}x (runs {', '.join(f'{r:.3f}' for r in good)}); "
              f"{med([m for m in ms if m]) or 0:.4f} ms vs torch.mm {med([t for t in torch_ms if t]) or 0:.4f} ms",
              flush=True)


# ------------------------------------------------------------------------------------ 4. host time

def host_and_gpu_us(fn, argsets, n: int, intercept: bool) -> tuple[float, float]:
    """(host µs per call to enqueue n calls, no sync; GPU µs per call between events around them).
    With `intercept`, inside the handler the grader's run_batch pushes for a timed batch."""
    sync()
    tensors = [t for args in argsets for t in args if isinstance(t, torch.Tensor)]
    ctx = launches.intercept(gather._Call(CallPolicy(), tensors)) if intercept else contextlib.nullcontext()
    with no_gc(), ctx as call:
        if not DRY:
            start, end = event_pair()
            start.record()
        t0 = time.perf_counter()
        for i in range(n):
            if call is not None:
                call.launches = []
            fn(*argsets[i % len(argsets)])
        t1 = time.perf_counter()
        if not DRY:
            end.record()
    sync()
    t2 = time.perf_counter()
    gpu_us = start.elapsed_time(end) * 1e3 / n if not DRY else (t2 - t0) * 1e6 / n
    return (t1 - t0) * 1e6 / n, gpu_us


def host_times(tag: str, repeats: int = 3) -> dict:
    n = 4 if DRY else 60
    argsets = [input_set(S4)]
    rows = {}
    for name in L.timed():
        for intercept in (False, True):
            key = f"{name} | {'interception' if intercept else 'plain'}"
            try:
                L.fns[name](*argsets[0])
                got = [host_and_gpu_us(L.fns[name], argsets, n, intercept) for _ in range(repeats)]
                h, g = med([x[0] for x in got]), med([x[1] for x in got])
                rows[key] = {"host_us": round(h, 1), "gpu_us": round(g, 1), "host_over_gpu": round(h / g, 3),
                             "runs": [[round(x, 1) for x in pair] for pair in got]}
                print(f"  {tag} {key}: host {h:.1f} µs/call, GPU {g:.1f} µs/call (host/GPU {h / g:.2f})", flush=True)
            except Exception as exc:  # noqa: BLE001
                rows[key] = {"error": first_line(exc)}
                print(f"  {tag} {key}: {first_line(exc)}", flush=True)
    return {"calls": n, "size": sz(S4), "rows": rows}


def time_piece(fn, n: int) -> float:
    with no_gc():
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e6 / n


def host_pieces() -> dict:
    """The shipped launcher's host work, piece by piece (µs per call)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, b, c = input_set(S4)
    M, K = a.shape
    N = b.shape[1]
    cfg = L.config_for(S4)
    kw = cfg.all_kwargs()
    grid = (min(L.sms, triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"])),)
    scratch = 3 * 128 * grid[0]

    def intercept_once():
        with launches.intercept(gather._Call(CallPolicy(), [a, b, c])):
            pass
    host_only = {
        "stride and alignment checks (3 tensors)":
            lambda: [t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16 for t in (a, b, c)],
        "torch.cuda.get_device_properties(...).multi_processor_count":
            (lambda: torch.cuda.get_device_properties(a.device).multi_processor_count) if not DRY else None,
        "triton.set_allocator(lambda ...)":
            lambda: triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEV)),
        f"descriptor scratch: torch.empty({scratch} int8)": lambda: torch.empty(scratch, dtype=torch.int8, device=DEV),
        "three host TensorDescriptors, built each call":
            lambda: [TensorDescriptor(t, list(t.shape), list(t.stride()), [64, 64]) for t in (a, b, c)],
        "launches.intercept(...) entered and left (once per timed batch)": intercept_once,
    }
    out = {}
    for what, fn in host_only.items():
        if fn is None:
            continue
        try:
            out[what] = round(time_piece(fn, 2000), 2)
        except Exception as exc:  # noqa: BLE001
            out[what] = first_line(exc)
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    n = 4 if DRY else 60
    launch_only = {
        "autotuner launch only (grid and NUM_SMS precomputed)":
            lambda a, b, c: L.tuner[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), NUM_SMS=L.sms),
        "JIT launch only (the chosen configuration)":
            lambda a, b, c: L.jit[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), NUM_SMS=L.sms, **kw),
    }
    for what, fn in launch_only.items():
        try:
            fn(a, b, c)
            got = [host_and_gpu_us(fn, [(a, b, c)], n, False) for _ in range(3)]
            out[what] = {"host_us": round(med([x[0] for x in got]), 1), "gpu_us": round(med([x[1] for x in got]), 1)}
        except Exception as exc:  # noqa: BLE001
            out[what] = first_line(exc)
    for k, v in out.items():
        print(f"  {k}: {v}", flush=True)
    return out


# ------------------------------------------------------------------------------------ 5-6. the grader's path

def grader_correctness() -> dict:
    out = {}
    for name in NAMES:
        if not L.ok.get(name):
            out[name] = "not checked: wrong or failed in part 2"
            continue
        try:
            check_correctness(ch05.HOPPER, L.fns[name], sizes=CHECK_SIZES, trials=1, verbose=False)
            out[name] = f"correct at {', '.join(map(sz, CHECK_SIZES))}"
        except Exception as exc:  # noqa: BLE001
            out[name] = first_line(exc)
            L.ok[name] = False
        print(f"  {name}: {out[name]}", flush=True)
    return out


def exercise_at(size):
    return ch05.HOPPER if tuple(size) == tuple(ch05.HOPPER.speed_size()) else replace(ch05.HOPPER, speed_size=lambda: size)


def graded_runs(rec: Record, runs: int) -> dict:
    """measure_speed as the Hopper stretch cell calls it (check_matmul_hopper -> check_speed)."""
    plan = []
    for i in range(runs):
        plan.append(("shipped", S4))
        if i == 0:
            plan.append(("fixed", S4))
            plan.append(("hostdesc", S4))
    plan += [("shipped", S8), ("hostdesc", S8)]
    out = {}
    for name, size in plan:
        if not L.ok.get(name):
            continue
        key = f"{name} {sz(size)}"
        try:
            r = measure_speed(ch05.HOPPER, L.fns[name], BAR, size=None if size == S4 else size)
            k = r.kernels
            row = {"speedup": r4(r.speedup), "ms": r4(r.ms), "baseline_ms": r4(r.baseline_ms), "baseline": r.baseline_name,
                   "rounds": r.comparison.rounds, "spread": r4(r.comparison.candidate.spread),
                   "baseline_spread": r4(r.comparison.baseline.spread), "size": r.size,
                   "candidate_rounds_ms": [r4(x) for x in r.comparison.candidate.rounds_ms],
                   "baseline_rounds_ms": [r4(x) for x in r.comparison.baseline.rounds_ms]}
            if k is not None:
                row.update(trace_note=k.note, kernel_ms=r4(k.kernel_ms) if k.note is None else None,
                           busy_ms=r4(k.busy_ms), launcher_host_ms=r4(k.host_ms), launches_per_call=k.launches,
                           kernels=[f"{x.name} x{x.launches:g} {x.ms:.4f} ms" for x in k.rows[:3]])
            print(f"  measure_speed {key}: {r.speedup:.3f}x ({r.ms:.4f} ms vs torch.mm {r.baseline_ms:.4f} ms, "
                  f"{r.comparison.rounds} rounds); traced: kernel {row.get('kernel_ms')} ms, busy {row.get('busy_ms')} ms, "
                  f"launcher host {row.get('launcher_host_ms')} ms per call", flush=True)
        except Exception as exc:  # noqa: BLE001 - without a GPU: "no GPU: speed not measured", as expected
            row = {"error": first_line(exc)}
            print(f"  measure_speed {key}: {row['error']}", flush=True)
        out.setdefault(key, []).append(row)
    for key, rows in out.items():
        name, size = key.split(" ")
        good = [x for x in rows if "speedup" in x]
        if good:
            add_ratio_rows(rec, "measure_speed (graded path)", "ch05.HOPPER, bar 5a-hopper, as the stretch cell",
                           tuple(map(int, size.split("x"))), name, [x["ms"] for x in good],
                           [x["baseline_ms"] for x in good],
                           kernel_ms=[x.get("kernel_ms") for x in good], busy_ms=[x.get("busy_ms") for x in good],
                           launcher_host_ms=[x.get("launcher_host_ms") for x in good])
    return out


# ------------------------------------------------------------------------------------ 8. replicas

class NoFlushBackend(timing.BatchBackend):
    """BatchBackend without the L2 flush before each batch (it still synchronizes)."""

    def flush(self) -> None:
        self.synchronize()


class PlainBatch:
    """A contender timed like the candidate's batches (events around reps calls, the end event after a
    device-wide synchronize, gc off, the after-batch hook), without the seam's launch interception."""

    def __init__(self, fn, argsets, after=None):
        self.fn, self.argsets, self.after = fn, [tuple(a) for a in argsets], after

    def timed_batch(self, reps: int) -> float:
        ms = batch_ms_noflush(self.fn, self.argsets, reps) * reps
        if self.after is not None:
            self.after(reps)
        return ms


class SeamBatch(PlainBatch):
    """A contender's batches through grader.isolation.facts.run_batch, as a learner's, without the
    rules (torch.mm launches none of the learner's kernels)."""

    def timed_batch(self, reps: int) -> float:
        ms = gather.run_batch(self.fn, self.argsets, {}, reps).event_ms
        if self.after is not None:
            self.after(reps)
        return ms


def batch_ms_noflush(fn, argsets, n: int) -> float:
    sync()
    with no_gc():
        if DRY:
            t0 = time.perf_counter()
            for i in range(n):
                fn(*argsets[i % len(argsets)])
            return (time.perf_counter() - t0) * 1e3 / n
        start, end = event_pair()
        start.record()
        for i in range(n):
            fn(*argsets[i % len(argsets)])
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
    return start.elapsed_time(end) / n


def rotating(fn, argsets):
    state = [0]

    def call():
        args = argsets[state[0] % len(argsets)]
        state[0] += 1
        fn(*args)
    return call


REPLICAS = [  # (name, what changes from measure_speed, keyword arguments of replica())
    ("graded replica", ("as measure_speed: the candidate through the seam (LearnerFunction.batch), 2 input sets "
                        "rotated, sampled re-check + poison after each batch; torch.mm a plain call on set 0; "
                        "~20 ms batches; L2 flushed before each batch"), {}),
    ("candidate 1 set", "the candidate on one input set, as torch.mm", {"cand_sets": 1}),
    ("torch 2 sets", "torch.mm rotating the two input sets, as the candidate", {"base_sets": 2}),
    ("swapped sets", "candidate on 1 set, torch.mm on 2", {"cand_sets": 1, "base_sets": 2}),
    ("no after-batch", "no poisoning and no re-check between the candidate's batches", {"after": "none"}),
    ("poison only", "poisoning between batches, no sampled re-check", {"after": "poison"}),
    ("plain outputs", ("the candidate writes plain torch.empty outputs, not guard-banded views (and no "
                       "after-batch: compare with `no after-batch`)"), {"plain_out": True, "after": "none"}),
    ("candidate plain", "the candidate's batches without the seam (no launch interception), same events",
     {"cand_seam": False}),
    ("torch via seam", "torch.mm's batches through run_batch too (interception, gc off)", {"base_seam": True}),
    ("batches 5 ms", "batches of ~5 ms instead of ~20", {"target_ms": TARGET_MS / 4}),
    ("batches 80 ms", "batches of ~80 ms instead of ~20", {"target_ms": TARGET_MS * 4}),
    ("no L2 flush", "no flush before each batch", {"flush": False}),
    ("fixed launcher", "candidate = `fixed` (no autotuner, precomputed grid)", {"fn": "fixed"}),
    ("hostdesc launcher", "candidate = `hostdesc` (host descriptors, cached)", {"fn": "hostdesc"}),
]
REPLICAS_8K = ("graded replica", "candidate 1 set")


def replica(size, fn: str = "shipped", cand_sets: int = 2, base_sets: int = 1, cand_seam: bool = True,
            base_seam: bool = False, after: str = "graded", target_ms: float = TARGET_MS, flush: bool = True,
            plain_out: bool = False, max_rounds: int = 7) -> dict:
    """measure_speed's timing with the grader's own pieces, one factor changed by the caller."""
    ex = exercise_at(size)
    what = f"{ex.key} replica at {sz(size)}"
    gen, _ = correctness.fresh_generator(DEV)
    inputs = ex.make_inputs(size, gen, DEV)
    pristine = correctness.snapshot(inputs)
    guard = correctness.guarded(ex.make_output(size, DEV))
    sampler = _TimedSets(ex, size, DEV, inputs, pristine, guard, what)
    if len(sampler.sets) < max(cand_sets, base_sets):   # not enough free memory for a second set
        return {"error": f"only {len(sampler.sets)} input set(s) fit"}
    cand_argsets = sampler.argsets[:cand_sets]
    if plain_out:
        cand_argsets = [tuple(args[:-1]) + (ex.make_output(size, DEV),) for args in cand_argsets]
    sampler.sets = sampler.sets[:cand_sets]
    more = [tuple(s[0]) for s in sampler.sets[1:]] if base_sets > 1 else []
    if base_sets > 1 and not more:        # the candidate has one set: torch.mm gets a second of its own
        gen2, _ = correctness.fresh_generator(DEV)
        more = [tuple(ex.make_inputs(size, gen2, DEV))]
    base_argsets = [tuple(inputs) + (ex.make_output(size, DEV),)] + [m + (ex.make_output(size, DEV),) for m in more]
    hook = {"graded": sampler.after_batch, "poison": lambda reps: sampler.poison_all(), "none": None}[after]
    launcher = L.fns[fn]
    if cand_seam:
        candidate = as_learner(launcher).batch(cand_argsets, after_batch=hook)
    else:
        candidate = PlainBatch(launcher, cand_argsets, hook)
    baseline = SeamBatch(torch_mm, base_argsets) if base_seam else rotating(torch_mm, base_argsets)
    sampler.poison_all()
    backend = (timing.BatchBackend if flush else NoFlushBackend)(target_ms=target_ms, device=DEV)
    rounds = (2, 2) if DRY else (5, max_rounds)
    cmp = timing.compare(candidate, baseline, backend=backend, min_rounds=rounds[0], max_rounds=rounds[1],
                         baseline_name=TORCH)
    return {"speedup": r4(cmp.speedup), "ms": r4(cmp.candidate.median_ms), "torch_ms": r4(cmp.baseline.median_ms),
            "rounds": cmp.rounds, "spread": r4(cmp.candidate.spread), "torch_spread": r4(cmp.baseline.spread),
            "reps": timing.reps_for(target_ms, cmp.candidate.median_ms)}


def replicas(rec: Record, repeats: int) -> dict:
    out = {}
    todo = [(S4, r) for r in REPLICAS] + [(S8, r) for r in REPLICAS if r[0] in REPLICAS_8K]
    for rep in range(repeats):
        for size, (name, what, kwargs) in todo:
            if rep > 0 and size == S8:
                continue
            fn = kwargs.get("fn", "shipped")
            if not L.ok.get(fn):
                continue
            key = f"{name} | {sz(size)}"
            try:
                got = replica(size, **kwargs)
            except Exception as exc:  # noqa: BLE001
                got = {"error": first_line(exc)}
            out.setdefault(key, {"what": what, "runs": []})["runs"].append(got)
            print(f"  replica {key}: {got}", flush=True)
            after_part()
    for key, v in out.items():
        name, size = key.split(" | ")
        good = [x for x in v["runs"] if "speedup" in x]
        if good:
            add_ratio_rows(rec, f"replica: {name}", v["what"], tuple(map(int, size.split("x"))),
                           next((kw.get("fn", "shipped") for n, _, kw in REPLICAS if n == name), "shipped"),
                           [x["ms"] for x in good], [x["torch_ms"] for x in good])
    return out


# ------------------------------------------------------------------------------------ 9. device trace

def device_traces() -> dict:
    out = {}
    for size, n, nsets in ((S4, 50, 1), (S4, 50, 2), (S8, 10, 2)):
        if DRY:
            n = 2
        sets = [input_set(size) for _ in range(nsets)]
        for name in L.timed():
            key = f"{name} | {sz(size)} | {nsets} set{'s' if nsets > 1 else ''}"
            try:
                fn = L.fns[name]
                fn(*sets[0])
                sync()
                with trace.Recorder() as recorder:
                    with no_gc():
                        for i in range(n):
                            fn(*sets[i % nsets])
                    sync()
                t = recorder.trace
                if not t.traced:
                    out[key] = {"note": t.note}
                else:
                    out[key] = {"calls": n, "busy_us_per_call": round(t.busy_us / n, 2),
                                "span_us_per_call": round(t.span_us / n, 2),
                                "kernels": [{"name": op.name[:90], "count": op.count,
                                             "us_per_launch": round(op.total_us / max(1, op.count), 2)}
                                            for op in sorted(t.kernels(), key=lambda o: -o.total_us)[:3]],
                                "host_calls": dict(t.calls)}
            except Exception as exc:  # noqa: BLE001
                out[key] = {"error": first_line(exc)}
            print(f"  trace {key}: {out[key]}", flush=True)
        del sets
    return out


# ------------------------------------------------------------------------------------ 10. clocks

class SmiSampler:
    """nvidia-smi queried again and again from a thread while the main thread runs a phase: each sample
    is (time before the query, time after, the fields). A thread waiting on a child process holds no GIL,
    and a query is a separate process, so the GPU work being sampled is not slowed."""

    def __init__(self, fields: str):
        import threading

        self.fields, self.samples, self.stop = fields, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            t0 = time.time()
            got = smi(self.fields)
            if got and not got.startswith("nvidia-smi"):
                self.samples.append((t0, time.time(), [x.strip() for x in got.splitlines()[0].split(",")]))
            self.stop.wait(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        return False


def clocks(seconds: float = 0.6) -> dict:
    """SM clock, power and temperature while torch.mm and the shipped launcher each run back-to-back
    batches and do_bench-style calls (flush, call) at 4096^3."""
    if DRY:
        return {"note": "no GPU: not sampled"}
    fields = None
    for reasons in ("clocks_event_reasons.active", "clocks_throttle_reasons.active", None):
        query = "clocks.sm,power.draw,temperature.gpu" + (f",{reasons}" if reasons else "")
        got = smi(query)
        if got and not got.startswith("nvidia-smi"):
            fields = query
            break
    if fields is None:
        return {"note": f"nvidia-smi cannot be queried here: {smi('clocks.sm')}"}
    a, b, c = input_set(S4)
    n = calls_for(S4)
    phases = []
    with SmiSampler(fields) as sampler:
        time.sleep(0.3)
        for name in (TORCH, "shipped"):
            if not (name == TORCH or L.ok.get(name)):
                continue
            fn = L.fns[name]
            for style, body in (("back-to-back", lambda fn=fn: batch_ms_noflush(fn, [(a, b, c)], n)),
                                ("do_bench-style", lambda fn=fn: per_call_ms(fn, (a, b, c), n // 2, True))):
                idle0 = time.time()
                time.sleep(0.25)
                t0 = time.time()
                ms, end = [], t0 + seconds
                while time.time() < end:
                    ms.append(body())
                phases.append({"launcher": name, "style": style, "idle_from": idle0, "start": t0, "end": time.time(),
                               "ms_per_call": r4(med(ms)), "batches": len(ms)})

    def num(x):
        try:
            return float(x)
        except ValueError:
            return None
    out = {"fields": fields, "samples": len(sampler.samples), "phases": []}
    for ph in phases:
        # a sample counts for a phase when its query ran entirely inside it (the first 0.1 s left out)
        for label, lo, hi in (("idle before", ph["idle_from"], ph["start"]), ("running", ph["start"] + 0.1, ph["end"])):
            inside = [f for q0, q1, f in sampler.samples if lo <= q0 and q1 <= hi]
            row = {"launcher": ph["launcher"], "style": ph["style"], "when": label, "samples": len(inside),
                   "sm_mhz": med([num(f[0]) for f in inside]), "power_w": med([num(f[1]) for f in inside]),
                   "temp_c": med([num(f[2]) for f in inside]),
                   "reasons": sorted({f[3] for f in inside if len(f) > 3}),
                   "ms_per_call": ph["ms_per_call"] if label == "running" else None}
            out["phases"].append(row)
            print(f"  clocks {ph['launcher']} {ph['style']} {label}: {row}", flush=True)
    return out


# ------------------------------------------------------------------------------------ cross-compile (CPU)

def xcompile() -> dict:
    """The host-descriptor kernel compiled for sm_90 on this machine (no GPU) at 4096^3, for each of the
    notebook's TMA configurations, with Triton's host TensorDescriptor on meta tensors."""
    from submissions.build import launchers
    from triton.tools.tensor_descriptor import TensorDescriptor

    from grader.cuda import archs, crosscompile

    ns = launchers("ch05", "correct", ["matmul-solution", "hopper-solution"])
    arch = archs.by_name("sm_90")
    m = n = k = 4096
    out = {}
    for cfg in ns["TMA_CONFIGS"]:
        kw = cfg.all_kwargs()
        bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
        key = str(cfg)
        try:
            # Real (CPU) tensors for the descriptors' bases: the binder reads data_ptr() for alignment.
            a = torch.empty(m, k, dtype=torch.float16)
            b = torch.empty(k, n, dtype=torch.float16)
            c = torch.empty(m, n, dtype=torch.float16)
            descs = (TensorDescriptor(a, [m, k], [k, 1], [bm, bk]), TensorDescriptor(b, [k, n], [n, 1], [bk, bn]),
                     TensorDescriptor(c, [m, n], [n, 1], [bm, bn // 2 if kw["SPLIT_STORE"] else bn]))
            compiled = crosscompile.compile_kernel(matmul_tma_hostdesc_kernel, (*descs, m, n, k),
                                                   {**kw, "NUM_SMS": 132}, arch)
            ptx = compiled.asm["ptx"]
            out[key] = {"ok": True, "shared": int(compiled.metadata.shared), "num_warps": int(compiled.metadata.num_warps),
                        "wgmma": ptx.count("wgmma.mma_async"), "tma": ptx.count("cp.async.bulk.tensor"),
                        "global_scratch": int(getattr(compiled.metadata, "global_scratch_size", 0) or 0)}
        except Exception as exc:  # noqa: BLE001
            out[key] = {"ok": False, "error": first_line(exc)}
        print(f"  {key}: {out[key]}", flush=True)
    return out


# ------------------------------------------------------------------------------------ tables

def rows_table(rec: Record) -> list[str]:
    lines = [("| part | size | launcher | ratio (median) | min-max (n) | launcher ms | torch.mm ms | traced kernel ms | "
              "launcher host ms |"), "|---|---|---|---|---|---|---|---|---|"]
    for row in rec.data["rows"]:
        good = [r for r in row["ratios"] if r is not None]
        if not good:
            lines.append(f"| {row['part']} | {row['size']} | {row['launcher']} | - | no result | | | | |")
            continue
        km, hm = med(row.get("kernel_ms") or []), med(row.get("launcher_host_ms") or [])
        lines.append(f"| {row['part']} | {row['size']} | {row['launcher']} | {med(good):.3f} | {min(good):.3f}-{max(good):.3f} "
                     f"({len(good)}) | {med([m for m in row['ms'] if m]):.4f} | {med([t for t in row['torch_ms'] if t]):.4f} | "
                     f"{'' if km is None else f'{km:.4f}'} | {'' if hm is None else f'{hm:.4f}'} |")
    return lines


def ratio_of(rec: Record, part: str, size, launcher: str = "shipped"):
    for row in rec.data["rows"]:
        if row["part"] == part and row["size"] == sz(size) and row["launcher"] == launcher:
            return med([r for r in row["ratios"] if r is not None])
    return None


def fmt(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def findings(rec: Record) -> list[str]:
    """Each hypothesis's figures side by side (automatic comparisons; the lead reads and decides)."""
    P = rec.data["parts"]

    def res(name):
        return (P.get(name) or {}).get("result") or {}
    out = ["## Findings (figures side by side)", ""]
    db = ratio_of(rec, "pristine: do_bench", S4)
    ms = ratio_of(rec, "measure_speed (graded path)", S4)
    out.append(f"- The gap: shipped launcher at {sz(S4)}, do_bench {fmt(db)}x, measure_speed {fmt(ms)}x; "
               f"at {sz(S8)}, do_bench {fmt(ratio_of(rec, 'pristine: do_bench', S8))}x, measure_speed "
               f"{fmt(ratio_of(rec, 'measure_speed (graded path)', S8))}x.")
    for row in rec.data["rows"]:
        if row["part"] == "measure_speed (graded path)" and row["launcher"] == "shipped":
            out.append(f"  - measure_speed at {row['size']}: a call {fmt(med(row['ms']), 4)} ms (timed rounds' median), "
                       f"its kernel alone {fmt(med(row.get('kernel_ms') or []), 4)} ms and host time in the launcher "
                       f"{fmt(med(row.get('launcher_host_ms') or []), 4)} ms per call (traced batch); torch.mm "
                       f"{fmt(med(row['torch_ms']), 4)} ms.")
    modes = ", ".join(f"{k} {fmt(ratio_of(rec, f'pristine: {k}', S4))}" for k, _, _ in MODES)
    out.append(f"- Timing modes at {sz(S4)}, shipped (pristine): {modes}.")
    for name in ("fixed", "hostdesc"):
        out.append(f"  - `{name}`: " + ", ".join(f"{k} {fmt(ratio_of(rec, f'pristine: {k}', S4, name))}" for k, _, _ in MODES)
                   + f"; measure_speed {fmt(ratio_of(rec, 'measure_speed (graded path)', S4, name))}.")
    host = res("host time per call, pristine").get("rows", {})
    host_after = res("host time per call, after tracing").get("rows", {})
    tr = res("kernel time from the device trace")
    kern = (tr.get(f"shipped | {sz(S4)} | 2 sets") or {}).get("kernels") or [{}]
    kt = (tr.get(f"{TORCH} | {sz(S4)} | 2 sets") or {}).get("kernels") or [{}]

    def h(name, path, table=host):
        return (table.get(f"{name} | {path}") or {}).get("host_us")
    out.append(f"- (a) host: host µs per call at {sz(S4)} (plain / under the grader's interception; after tracing): "
               + "; ".join(f"{n} {fmt(h(n, 'plain'), 1)} / {fmt(h(n, 'interception'), 1)} "
                           f"({fmt(h(n, 'plain', host_after), 1)} / {fmt(h(n, 'interception', host_after), 1)})"
                           for n in (TORCH,) + NAMES)
               + f". Kernel alone (device trace, back-to-back, 2 sets): shipped {fmt(kern[0].get('us_per_launch'), 1)} µs, "
               f"torch.mm {fmt(kt[0].get('us_per_launch'), 1)} µs. b2b 2 sets {fmt(ratio_of(rec, 'pristine: b2b 2 sets', S4))}x "
               f"vs the same calls from a CUDA graph {fmt(ratio_of(rec, 'pristine: graph 2 sets', S4))}x.")
    hi, k0 = h("shipped", "interception"), kern[0].get("us_per_launch")
    if hi is not None and k0:
        out.append(f"  - host/kernel for the shipped launcher under interception: {hi / k0:.2f} "
                   f"({'the host cannot keep the GPU fed' if hi >= 0.9 * k0 else 'the host keeps ahead of the GPU'}).")

    def rep(name, size=S4):
        return fmt(ratio_of(rec, f"replica: {name}", size, next((kw.get("fn", "shipped") for n, _, kw in REPLICAS
                                                                   if n == name), "shipped")))
    out.append(f"- (b) L2 / input sets (replicas at {sz(S4)}): graded replica {rep('graded replica')}, candidate on 1 set "
               f"{rep('candidate 1 set')}, torch.mm on 2 sets {rep('torch 2 sets')}, swapped {rep('swapped sets')}; "
               f"per-call events with flush {fmt(ratio_of(rec, 'pristine: events+flush', S4))} vs without "
               f"{fmt(ratio_of(rec, 'pristine: events', S4))}; b2b 1 set {fmt(ratio_of(rec, 'pristine: b2b 1 set', S4))} "
               f"vs 2 sets {fmt(ratio_of(rec, 'pristine: b2b 2 sets', S4))}.")
    out.append(f"- (c) batch length: 5 ms {rep('batches 5 ms')}, 20 ms {rep('graded replica')}, 80 ms "
               f"{rep('batches 80 ms')}; clocks: see the table below.")
    out.append(f"- (d) accounting: no after-batch {rep('no after-batch')} (plain outputs {rep('plain outputs')}), "
               f"poison only {rep('poison only')}, no L2 flush "
               f"{rep('no L2 flush')}, candidate without the seam {rep('candidate plain')}, torch.mm through the seam "
               f"{rep('torch via seam')}.")
    out.append(f"- (6) launchers with less host work in the replica: fixed {rep('fixed launcher')}, hostdesc "
               f"{rep('hostdesc launcher')}.")
    out.append(f"- {sz(S8)} control: graded replica {rep('graded replica', S8)}, candidate 1 set {rep('candidate 1 set', S8)}.")
    base = ratio_of(rec, "replica: graded replica", S4)
    if base is not None:
        deltas = []
        for name, _, kw in REPLICAS[1:]:
            r = ratio_of(rec, f"replica: {name}", S4, kw.get("fn", "shipped"))
            if r is not None:
                deltas.append((abs(r - base), name, r - base))
        deltas.sort(reverse=True)
        if deltas:
            out.append("- One factor at a time, largest change from the graded replica first: "
                       + ", ".join(f"{n} {d:+.3f}" for _, n, d in deltas[:6]) + ".")
    return out


def write_report(rec: Record) -> str:
    env = rec.data.get("environment") or {}
    gpu = env.get("gpu") or "no GPU: dry run, nothing measured"
    chosen = (res_of(rec, "launchers: load, autotune, first calls") or {}).get("chosen")
    title = (f"# Issue 19: the Hopper rung's do_bench / measure_speed gap ({gpu}; Triton {env.get('triton', '?')}, "
             f"torch {env.get('torch', '?')})")
    intro = ("Ratios are torch.mm's time over the launcher's, measured in the same process (above 1: faster than "
             "torch.mm). `shipped` is the notebook's `matmul_tma`; `fixed` the same kernel without the autotuner; "
             f"`hostdesc` host-side descriptors. Chosen configurations: {chosen}.")
    lines = [title, "", intro, ""]
    lines += rows_table(rec)
    host = res_of(rec, "host time per call, pristine") or {}
    host_after = res_of(rec, "host time per call, after tracing") or {}
    if host.get("rows") or host_after.get("rows"):
        lines += ["", f"## Host time per call ({host.get('calls')} calls at {host.get('size')}, no sync inside)", "",
                  "| when | launcher | path | host µs/call | GPU µs/call (same batch) | host/GPU |", "|---|---|---|---|---|---|"]
        for when, table in (("pristine", host), ("after tracing", host_after)):
            for key, v in (table.get("rows") or {}).items():
                name, path = key.split(" | ")
                lines.append(f"| {when} | {name} | {path} | {v.get('host_us', v.get('error', ''))} | {v.get('gpu_us', '')} | "
                             f"{v.get('host_over_gpu', '')} |")
    pieces = res_of(rec, "host pieces of the launcher")
    if pieces:
        lines += ["", "## The launcher's host work, piece by piece (µs per call)", "", "| piece | µs |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in pieces.items()]
    tr = res_of(rec, "kernel time from the device trace")
    if tr:
        lines += ["", "## Kernel time alone, device trace of back-to-back calls", "",
                  "| launcher, size, sets | kernel µs per launch | busy µs per call | span µs per call | note |",
                  "|---|---|---|---|---|"]
        for key, v in tr.items():
            k = (v.get("kernels") or [{}])[0]
            lines.append(f"| {key.replace(' | ', ', ')} | {k.get('us_per_launch', '')} | {v.get('busy_us_per_call', '')} | "
                         f"{v.get('span_us_per_call', '')} | {v.get('note') or v.get('error') or k.get('name', '')} |")
    ck = res_of(rec, "clocks and power (nvidia-smi)")
    if ck and ck.get("phases"):
        lines += ["", f"## Clocks and power ({ck.get('samples')} nvidia-smi samples, every 50 ms)", "",
                  "| launcher | style | when | samples | SM MHz | power W | temp C | reasons | ms per call |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for p in ck["phases"]:
            lines.append(f"| {p['launcher']} | {p['style']} | {p['when']} | {p['samples']} | {p['sm_mhz']} | {p['power_w']} | "
                         f"{p['temp_c']} | {' '.join(p['reasons'])} | {p['ms_per_call'] or ''} |")
    elif ck:
        lines += ["", f"Clocks: {ck.get('note')}"]
    lines += [""] + findings(rec)
    lines += ["", "### What each measurement is", ""]
    lines += [f"- `pristine: {k}` / `after tracing: {k}`: {w}." for k, w, _ in MODES]
    lines += [f"- `replica: {n}`: {w}." for n, w, _ in REPLICAS]
    lines.append("- `measure_speed (graded path)`: grader.harness.exercise.measure_speed(ch05.HOPPER, fn, '5a-hopper'"
                 "[, size=8192^3]), as ch05.check_matmul_hopper calls it; traced kernel/host figures from its traced batch.")
    lines += ["", f"correctness (grader): {res_of(rec, 'correctness through ch05.HOPPER (grader)')}",
              f"errors: {rec.data['errors'] or 'none'}", f"skipped: {rec.data['skipped'] or 'none'}",
              f"elapsed: {rec.elapsed():.0f} s"]
    text = "\n".join(lines) + "\n"
    (rec.out / "hopper_gap.md").write_text(text)
    return text


def res_of(rec: Record, name: str):
    return (rec.data["parts"].get(name) or {}).get("result")


# ------------------------------------------------------------------------------------ main

def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: the interpreter at tiny sizes, nothing measured")
    p.add_argument("--xcompile", action="store_true", help="no GPU: cross-compile the host-descriptor kernel for sm_90")
    p.add_argument("--budget", type=float, default=200.0, help="seconds after which no new part starts")
    p.add_argument("--repeats", type=int, default=3, help="rounds of the timing modes at 4096^3")
    p.add_argument("--graded-runs", type=int, default=3, help="measure_speed runs of the shipped launcher at 4096^3")
    p.add_argument("--replica-repeats", type=int, default=2, help="rounds of the replicas at 4096^3")
    args = p.parse_args(argv)
    rec = Record(args.out, "assets/results/issue19/hopper_gap.py", DRY, budget_s=args.budget, after_part=after_part,
                 args=vars(args) | {"out": str(args.out)})
    if args.xcompile:
        rec.data["xcompile"] = rec.part("cross-compile the host-descriptor kernel for sm_90", xcompile)
        rec.save()
        print(json.dumps(rec.data["xcompile"], indent=1))
        return 0 if not rec.data["errors"] else 1

    rec.data["environment"] = rec.part("environment", environment)
    rec.part("launchers: load, autotune, first calls", load_and_warm)
    if L is not None:
        repeats = 1 if DRY else args.repeats
        rec.part("timing modes, pristine", lambda: timing_modes(rec, "pristine", [(S4, repeats), (S8, 1)]))
        rec.part("host time per call, pristine", lambda: host_times("pristine"))
        rec.part("host pieces of the launcher", host_pieces)
        rec.part("correctness through ch05.HOPPER (grader)", grader_correctness)
        rec.part("measure_speed as the stretch cell", lambda: graded_runs(rec, 1 if DRY else args.graded_runs))
        rec.part("host time per call, after tracing", lambda: host_times("after tracing", repeats=2))
        rec.part("timing modes, after tracing",
                 lambda: timing_modes(rec, "after tracing", [(S4, 1)], names=[TORCH, "shipped"],
                                      modes=("do_bench", "b2b 2 sets", "run_batch 2 sets")))
        rec.part("measure_speed replicas, one factor at a time",
                 lambda: replicas(rec, 1 if DRY else args.replica_repeats))
        rec.part("kernel time from the device trace", device_traces)
        rec.part("clocks and power (nvidia-smi)", clocks)
    text = write_report(rec)
    rec.save()
    print("\n" + text, flush=True)
    print(f"wrote {args.out / 'hopper_gap.json'} and {args.out / 'hopper_gap.md'} after {rec.elapsed():.0f} s", flush=True)
    return 0 if not rec.data["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
