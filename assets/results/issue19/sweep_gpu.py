"""Issue 19: one sweep that finds the chapter 5 Hopper rung and the chapter 6 tuned forward that reach the
libraries (>= 1.0x torch.mm fp16 at 4096^3 and 8192^3; >= 1.0x SDPA at N = 4096, D = 64 and 128, causal
and not), on an H100 in one run.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/sweep_gpu.py --out DIR [--only ch05,ch06] [--budget S]
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/sweep_gpu.py --out DIR --dry        # CPU plumbing
    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/sweep_gpu.py --out DIR --xcompile   # CPU: sm_90 compiles

The candidates (assets/results/issue19/sweep_kernels.py, in priority order, so that a cut run has measured
the likeliest first; each is ONE kernel with ONE fixed configuration, no autotuner):
- ch05 (--max-ch05, default 40 of 200-odd): the shipped Hopper rung's configurations; `flatten=True` on the
  tile loop; 4 output strips; 256x128 tiles; a data-parallel (one program per tile) TMA kernel with a TMA or
  a masked pointer store; `warp_specialize=True` on the tile loop (4 warps: Triton 3.6 makes it 12 warps
  on sm_90; with 8 warps it compiles without specialising, cross-compiled on a CPU); then the grid
  BLOCK_M/N 128/256, BLOCK_K 64/128, stages 3-5, warps 4/8, GROUP_M 8/4/16, 1/2/4 strips, flatten.
- ch06 (--max-ch06 per case, default 32 of 76-88; 128 in all): for each (D, causal), the shipped kernel
  (pointer loads, read from the solution notebook) and the TMA variant (Q, K, V through
  `tl.make_tensor_descriptor`) at the autotuner's known choices first; then a single-loop TMA kernel with
  `warp_specialize=True` (4 warps; Triton 3.6 cannot warp-specialise the shipped two-loop form on sm_90:
  its NVGPUWarpSpecialization pass fails, cross-compiled on a CPU) and the same loop unspecialised; then
  both main variants at more configurations, TMA with host-side descriptors, and the grid BLOCK_M 64/128,
  BLOCK_N 32/64/128, warps 4/8, stages 2-5.
All 168 default candidates cross-compile for sm_90 with Triton 3.6 on a CPU (--xcompile), within 227 KiB of
shared memory, and are correct under the interpreter (--dry).

What it does, and how long each part takes on an H100 (Triton 3.6):
1. versions, GPU, timing sizes (ch06._speed_size() as the graded cell sees it)                  (~3 s)
   and SDPA's backends timed once per ch06 case (which one the graded cell's default call is)    (~5 s)
2. the sweep (--sweep-share of the budget at most, default 0.45, ~210 s): worker processes (CPU cores - 4,
   at most 12; ~10-15 s to start) compile each candidate at every specialisation it is checked at (the
   JIT's warmup: CPU only; a Triton matmul config ~1-3 s, an attention config similar; ch05 has 3
   specialisations, ch06 2), then check it on the GPU holding a GPU lock: fresh random inputs against a
   float64 reference (float32 without TF32 at the timing sizes), output poisoned with NaN first, at
   ch05 (129, 264, 72), (1000, 1024, 328), 4096^3, 8192^3; ch06 N = 77, 1000 and the timing size, in the
   candidate's (D, causal). A compile error, a wrong result, a crash (the worker is replaced) or a hang
   (task over --task-timeout: the worker is killed) is recorded and never stops the sweep.
   Meanwhile this process times every correct candidate, holding the GPU lock (no worker touches the GPU
   then), with triton.testing.do_bench (median), its torch baseline timed right after it on the same
   inputs: torch.mm; SDPA with the FlashAttention backend forced (sdpa_kernel(FLASH_ATTENTION)) and SDPA
   as the graded cell calls it (default backend). ~0.6 s a ch05 candidate (both sizes), ~0.5 s a ch06
   one: 40 + 128 candidates ~ 90-110 s, overlapping the compiles.
3. the top 3 of each case (ch05 at 4096^3 and at 8192^3; ch06's four) re-timed through the graded path,
   `grader.harness.exercise.measure_speed` with the chapter's Exercise (ch05.HOPPER at each size, bar
   5a-hopper; ch06.fast_exercise(D, causal), bar 6-stretch-fast), in rounds (one run of every top
   candidate per round, up to --runs rounds, default 5) while the budget lasts: ~3 s a ch05 4096^3 run,
   ~5 s at 8192^3, ~4.5 s a ch06 run: ~80 s a round, so 3-4 rounds fit at the default budget.
4. tables (Markdown, per case sorted by ratio) and JSON written after every part (and every 10 timed
   candidates) under --out: sweep_gpu.json, sweep_gpu.md; at the end the tables and, for each case, the
   triton.Config(...) lines and the variant (with the cell to paste, from sweep_kernels.py) to ship.
Parts that would start after --budget seconds (default 470) are skipped and the JSON says so. A watchdog
writes what was measured and exits if nothing progresses for 240 s (a kernel that hangs in this process).

--dry: no GPU. The Triton interpreter runs every candidate (or --max-* of them) at tiny sizes through the
same worker processes and checks; "timing" is one CPU call each (not a measurement); measure_speed is
called once to show that it says "no GPU".
SWEEP_SELFTEST=crash:N or hang:N (environment): worker task N crashes or hangs holding the GPU lock, to test
the recovery on a CPU with --dry.
--xcompile: no GPU. Cross-compiles every candidate for sm_90 with the Triton on the path (Triton 3.6 if
PYTHONPATH has it first) at the timing size: compiles or not, shared memory, warps after specialisation,
registers and spills (ptxas), wgmma and TMA instruction counts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
DRY = "--dry" in sys.argv
XCOMPILE = "--xcompile" in sys.argv
if DRY:  # before torch, Triton or the grader are imported: they read these once
    os.environ["TRITON_INTERPRET"] = "1"
if DRY or XCOMPILE:
    os.environ["LADDER_FORCE_NO_GPU"] = "1"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "assets" / "results"), str(HERE)]

import torch  # noqa: E402

import sweep_kernels as sk  # noqa: E402
from parts import Record  # noqa: E402

CH05_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))
DRY_CH05_SIZE = (130, 264, 72)
DRY_CH06_N = 100


# ------------------------------------------------------------------------------------------- environment

def environment() -> dict:
    import triton
    from grader.chapters import ch06
    from grader.cuda.gpu import gpu_info, versions

    info = gpu_info()
    env = {"versions": versions(), "triton": triton.__version__, "torch": torch.__version__,
           "gpu": info.name if info else None, "capability": list(info.capability) if info else None,
           "sm_count": info.sm_count if info else None, "cpu_count": os.cpu_count(),
           "ch06_speed_size": list(ch06._speed_size()) if info else None,
           "ch05_sizes": [list(s) for s in CH05_SIZES]}
    print(json.dumps(env, indent=1), flush=True)
    return env


# ------------------------------------------------------------------------------------------- workers

class Pool:
    """Worker processes (spawned, each with its own CUDA context), each given one task at a time from this
    process's list, in priority order, once it is ready. A worker that dies is replaced and its task
    recorded as lost; a worker whose task runs over `task_timeout` (not counting time spent waiting for
    the GPU lock) is killed (by its pid: a process this script started) and its GPU lock freed."""

    def __init__(self, n: int, speed_size, log_dir: Path, task_timeout: float):
        self.ctx = mp.get_context("spawn")
        self.result_q = self.ctx.Queue()
        self.lock = self.ctx.Lock()
        self.holder = self.ctx.Value("i", -1)
        self.speed_size, self.log_dir, self.task_timeout = speed_size, log_dir, task_timeout
        self.procs: dict[int, mp.Process] = {}
        self.queues: dict[int, object] = {}
        self.ready: set[int] = set()
        self.assigned: dict[int, list] = {}     # wid -> [task id, started]
        self.todo: list = []                     # (task id, candidate), in priority order
        self.next_wid, self.restarts = 0, 0
        log_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(n):
            self._start()

    def _start(self) -> None:
        wid = self.next_wid
        self.next_wid += 1
        q = self.ctx.Queue()
        p = self.ctx.Process(target=sk.worker_main, daemon=True,
                             args=(wid, q, self.result_q, self.lock, self.holder, DRY, self.speed_size,
                                   str(self.log_dir / f"worker-{wid}.log")))
        p.start()
        self.procs[wid], self.queues[wid] = p, q

    def submit(self, tasks) -> None:
        self.todo += list(tasks)

    def _dispatch(self) -> None:
        for wid in sorted(self.ready):
            if wid in self.procs and wid not in self.assigned and self.todo:
                tid, cand = self.todo.pop(0)
                self.assigned[wid] = [tid, time.time()]
                self.queues[wid].put((tid, cand))

    def poll(self, timeout: float) -> list[tuple[int, dict]]:
        """Finished tasks (task id, result), waiting at most `timeout` s for the first."""
        done = self._drain(timeout)
        done += self.check_health()
        self._dispatch()
        return done

    def _drain(self, timeout: float) -> list[tuple[int, dict]]:
        done = []
        deadline = time.time() + timeout
        while True:
            try:
                wait = max(0.0, deadline - time.time()) if not done else 0.0
                msg = self.result_q.get(timeout=wait) if wait > 0 else self.result_q.get_nowait()
            except Exception:  # noqa: BLE001 - queue.Empty
                break
            kind, wid = msg[0], msg[1]
            if kind == "ready":
                self.ready.add(wid)
                self._dispatch()
            elif kind == "done":
                if self.assigned.get(wid, [None])[0] == msg[2]:
                    del self.assigned[wid]
                done.append((msg[2], msg[3]))
                self._dispatch()
            elif kind == "dead":
                print(f"  worker {wid} exits: {msg[3]}", flush=True)
        return done

    def check_health(self) -> list[tuple[int, dict]]:
        """Kill a worker stuck past the timeout; replace dead ones. Returns their tasks as failures."""
        lost = []
        now = time.time()
        holder = self.holder.value
        overdue = [w for w, (_, t0) in self.assigned.items() if now - t0 > self.task_timeout and w in self.procs]
        if holder in overdue:          # the others may only be waiting for the lock it holds
            for w in overdue:
                if w != holder:
                    self.assigned[w][1] = now
            overdue = [holder]
        for wid in overdue:
            p = self.procs[wid]
            print(f"  worker {wid} (pid {p.pid}) over {self.task_timeout:.0f} s on task {self.assigned[wid][0]}: "
                  "killed", flush=True)
            p.kill()
            p.join(5)
            tid = self.assigned.pop(wid)[0]
            lost.append((tid, {"compile_ok": None, "correct": False,
                               "error": f"timeout: over {self.task_timeout:.0f} s (a hang, or a very slow compile); "
                                        "worker killed"}))
        for wid, p in list(self.procs.items()):
            if p.is_alive():
                continue
            if self.holder.value == wid:      # it died holding the GPU lock
                self.holder.value = -1
                self.lock.release()
            if wid in self.assigned:
                lost += self._drain(0.5)      # its last messages, if they are on their way
                if wid in self.assigned:
                    tid = self.assigned.pop(wid)[0]
                    lost.append((tid, {"compile_ok": None, "correct": False,
                                       "error": f"worker died (exit code {p.exitcode}): a crash in the compiler or "
                                                f"the kernel; see workers/worker-{wid}.log"}))
            del self.procs[wid]
            self.ready.discard(wid)
            if self.restarts < 24 and self.todo:
                self.restarts += 1
                self._start()
        return lost

    def busy(self) -> bool:
        return bool(self.todo or self.assigned)

    def acquire_gpu(self) -> None:
        while not self.lock.acquire(timeout=1.0):
            self.check_health()
        self.holder.value = 10 ** 6   # this process

    def release_gpu(self) -> None:
        self.holder.value = -1
        self.lock.release()

    def close(self) -> None:
        for wid, p in self.procs.items():
            self.queues[wid].put(None)
        for wid, p in list(self.procs.items()):
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join(5)
        self.procs.clear()


# ------------------------------------------------------------------------------------------- timing

class Timer:
    """Times candidates in this process with do_bench (median), each against its torch baseline timed
    right after it on the same inputs. Inputs are made once per case (fresh random)."""

    def __init__(self, dry: bool, speed_size):
        self.dry = dry
        self.device = "cpu" if dry else "cuda"
        self.speed_size = speed_size
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(int.from_bytes(os.urandom(6), "little"))
        self.inputs: dict = {}

    def bench(self, fn) -> float:
        if self.dry:   # one call on the CPU: exercises the plumbing, measures nothing
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        from triton.testing import do_bench
        return float(do_bench(fn, warmup=20, rep=80, return_mode="median"))

    def ch05(self, cand, fn) -> dict:
        from grader.chapters import ch05

        out = {}
        for size in ((DRY_CH05_SIZE,) if self.dry else CH05_SIZES):
            if size not in self.inputs:
                a, b = ch05._inputs(size, self.gen, self.device)
                self.inputs[size] = (a, b, torch.empty(size[0], size[1], device=self.device, dtype=torch.float16),
                                     torch.empty(size[0], size[1], device=self.device, dtype=torch.float16))
            a, b, c, c_ref = self.inputs[size]
            c.fill_(float("nan"))
            t0 = time.time()
            fn(a, b, c)   # the first call in this process: loads the compiled kernel (or compiles it)
            self.sync()
            first_s = time.time() - t0
            ms = self.bench(lambda: fn(a, b, c))
            torch_ms = self.bench(lambda: torch.mm(a, b, out=c_ref))
            diff = float((c.float() - c_ref.float()).abs().max())
            flops = 2 * size[0] * size[1] * size[2]
            out["x".join(map(str, size))] = {
                "ms": round(ms, 5), "torch_ms": round(torch_ms, 5), "ratio": round(torch_ms / ms, 4),
                "tflops": round(flops / ms / 1e9, 1), "max_diff_vs_torch": diff, "sane": diff <= 0.05,
                "first_call_s": round(first_s, 2)}
        return out

    def ch06(self, cand, fn) -> dict:
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        from grader.chapters import ch06

        d, causal = cand.case
        size = (1, 2, DRY_CH06_N, d) if self.dry else tuple(self.speed_size[:3]) + (d,)
        key = (size, causal)
        if key not in self.inputs:
            q, k, v = ch06.make_inputs(size, self.gen, self.device)
            self.inputs[key] = (q, k, v, torch.empty_like(q))
        q, k, v, o = self.inputs[key]
        o.fill_(float("nan"))
        t0 = time.time()
        fn(q, k, v, o, causal)
        self.sync()
        res = {"size": list(size), "first_call_s": round(time.time() - t0, 2)}
        ms = self.bench(lambda: fn(q, k, v, o, causal))
        res["ms"] = round(ms, 5)
        if self.dry:
            flash_ms = default_ms = self.bench(lambda: sdpa(q.float(), k.float(), v.float(), is_causal=causal))
            ref = sdpa(q.float(), k.float(), v.float(), is_causal=causal)
        else:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                flash_ms = self.bench(lambda: sdpa(q, k, v, is_causal=causal))
                ref = sdpa(q, k, v, is_causal=causal)
            default_ms = self.bench(lambda: sdpa(q, k, v, is_causal=causal))
        diff = float((o.float() - ref.float()).abs().max())
        flops = ch06.attention_flops(size, causal)
        res.update(flash_ms=round(flash_ms, 5), default_ms=round(default_ms, 5), ratio=round(flash_ms / ms, 4),
                   ratio_default=round(default_ms / ms, 4), tflops=round(flops / ms / 1e9, 1),
                   max_diff_vs_sdpa=diff, sane=diff <= 0.02)
        return res

    def sync(self):
        if not self.dry:
            torch.cuda.synchronize()


def sdpa_backends(timer: Timer) -> dict:
    """Which SDPA backend the graded cell's default call matches: each backend timed once per case."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from grader.chapters import ch06

    out = {}
    for d, causal in sk.CH06_CASES:
        size = tuple(timer.speed_size[:3]) + (d,)
        q, k, v = ch06.make_inputs(size, timer.gen, "cuda")
        row = {"default": round(timer.bench(lambda: sdpa(q, k, v, is_causal=causal)), 4)}
        for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
            try:
                with sdpa_kernel(getattr(SDPBackend, name)):
                    row[name] = round(timer.bench(lambda: sdpa(q, k, v, is_causal=causal)), 4)
            except Exception as exc:  # noqa: BLE001
                row[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        out[f"D={d} causal={causal}"] = row
        print(f"  SDPA ms, D={d} causal={causal}: {row}", flush=True)
    return out


# ------------------------------------------------------------------------------------------- the sweep

def case_keys(cand) -> list[str]:
    """The cases a candidate is ranked in: ch05 in two (one per size), ch06 in its own."""
    if cand.chapter == "ch05":
        return [f"ch05 {'x'.join(map(str, s))}" for s in ((DRY_CH05_SIZE,) if DRY else CH05_SIZES)]
    return [cand.case_name]


def ratio_in(entry: dict, case: str) -> float | None:
    t = entry.get("timing") or {}
    if case.startswith("ch05"):
        r = t.get(case.split()[1]) or {}
        return r.get("ratio") if r.get("sane") else None
    return t.get("ratio") if t.get("sane") else None


def sweep(rec: Record, cands: list, speed_size, args, timer: Timer, heartbeat, chapters) -> None:
    entries = rec.data["candidates"]
    for i, c in enumerate(cands):
        entries[c.key()] = {"chapter": c.chapter, "case": c.case_name, "variant": c.variant, "name": c.name,
                            "config": c.config_line(), "notebook_line": c.notebook_line(), "consts": c.kw, "num_warps": c.num_warps,
                            "num_stages": c.num_stages, "priority": c.priority, "note": c.note,
                            "shared_estimate": c.shared_bytes(), "status": "queued"}
    deadline = args.budget * args.sweep_share
    n_workers = args.workers or (2 if DRY else max(2, min(12, (os.cpu_count() or 8) - 4)))
    print(f"  {len(cands)} candidates, {n_workers} workers, sweep deadline {deadline:.0f} s", flush=True)
    pool = Pool(n_workers, speed_size, rec.out / "workers", args.task_timeout)
    _POOL[0] = pool
    pool.submit(list(enumerate(cands)))
    pending = set(range(len(cands)))
    to_time: list[int] = []
    timed = 0
    try:
        while (pending or to_time) and rec.elapsed() < deadline:
            heartbeat()
            if pending and not pool.procs:
                print("  no worker left: the remaining candidates are not checked", flush=True)
                break
            for tid, res in pool.poll(0.05 if to_time else 1.0):
                if tid not in pending:
                    continue
                pending.discard(tid)
                c = cands[tid]
                e = entries[c.key()]
                e.update(check=res, status="correct" if res.get("correct") else
                         ("compile error" if res.get("compile_ok") is False else
                          "incorrect" if res.get("compile_ok") else "lost"))
                flag = "ok " if res.get("correct") else "NO "
                why = res.get("why") or res.get("error") or ""
                print(f"  [{rec.elapsed():5.0f}s] checked {flag}{c.key()}  {why[:160]}", flush=True)
                if res.get("correct"):
                    to_time.append(tid)
                heartbeat()
            if to_time:
                to_time.sort()   # the likeliest first
                tid = to_time.pop(0)
                time_one(cands[tid], entries[cands[tid].key()], pool, timer)
                timed += 1
                heartbeat()
                if timed % 10 == 0:
                    save(rec)
                    write_tables(rec, chapters)
        left = [cands[t].key() for t in sorted(pending)] + [cands[t].key() for t in to_time]
        for k in left:
            entries[k]["status"] = "not reached (sweep deadline)"
        if left:
            rec.data["skipped"]["sweep"] = f"{len(left)} candidates not finished by the sweep deadline ({deadline:.0f} s)"
    finally:
        pool.close()
        _POOL[0] = None
        rec.data["sweep_summary"] = {"workers": n_workers, "worker_restarts": pool.restarts, "timed": timed,
                                     "elapsed_s": round(rec.elapsed(), 1)}


def time_one(c, e: dict, pool: Pool, timer: Timer) -> None:
    pool.acquire_gpu()
    try:
        fn = c.launcher()
        t0 = time.time()
        e["timing"] = timer.ch05(c, fn) if c.chapter == "ch05" else timer.ch06(c, fn)
        e["status"] = "timed"
        e["timing_s"] = round(time.time() - t0, 2)
        print(f"          timed {c.key()}: " + timing_text(c, e["timing"]), flush=True)
    except Exception as exc:  # noqa: BLE001
        e["status"] = "timing error"
        e["timing_error"] = f"{type(exc).__name__}: {sk._first_lines(exc)}"
        print(f"          TIMING ERROR {c.key()}: {e['timing_error']}", flush=True)
    finally:
        pool.release_gpu()


def timing_text(c, t: dict) -> str:
    if c.chapter == "ch05":
        return ", ".join(f"{s}: {r['ratio']:.3f}x torch.mm ({r['tflops']:.0f} TFLOP/s)" for s, r in t.items())
    return (f"{t['ratio']:.3f}x SDPA-flash, {t['ratio_default']:.3f}x SDPA default "
            f"({t['tflops']:.0f} TFLOP/s, {t['ms']:.3f} ms)")


# ------------------------------------------------------------------------------------------- graded path

def graded_fn(c):
    """The candidate as the learner's launcher the harness calls: `matmul_tma(a, b, out)` or
    `attention_fast(q, k, v, out, causal)` bound to its causal."""
    from grader.chapters import ch06

    launch = c.launcher()
    if c.chapter == "ch05":
        def matmul_tma(a, b, out):
            launch(a, b, out)
        return matmul_tma

    def attention_fast(q, k, v, out, causal):
        launch(q, k, v, out, causal)
    return ch06.bind(attention_fast, c.case[1])


def exercise_for(case: str):
    from grader.chapters import ch05, ch06

    if case.startswith("ch05"):
        size = tuple(int(x) for x in case.split()[1].split("x"))
        return replace(ch05.HOPPER, speed_size=lambda s=size: s), "5a-hopper"
    d, causal = int(case.split("D=")[1].split()[0]), "non-causal" not in case
    return ch06.fast_exercise(d, causal), ch06.fast_bar_key(d, causal)


def top(rec: Record, case: str, n: int) -> list[str]:
    rows = [(ratio_in(e, case), k) for k, e in rec.data["candidates"].items()
            if case in case_keys_of(e) and ratio_in(e, case) is not None]
    return [k for _, k in sorted(rows, reverse=True)[:n]]


def case_keys_of(e: dict) -> list[str]:
    if e["chapter"] == "ch05":
        return [f"ch05 {'x'.join(map(str, s))}" for s in ((DRY_CH05_SIZE,) if DRY else CH05_SIZES)]
    return [e["case"]]


def all_cases(chapters) -> list[str]:
    out = []
    if "ch05" in chapters:
        out += [f"ch05 {'x'.join(map(str, s))}" for s in ((DRY_CH05_SIZE,) if DRY else CH05_SIZES)]
    if "ch06" in chapters:
        out += [f"ch06 D={d} {'causal' if c else 'non-causal'}" for d, c in sk.CH06_CASES]
    return out


def graded_rounds(rec: Record, cands_by_key: dict, chapters, args) -> None:
    from grader.harness.exercise import measure_speed

    tops = {case: top(rec, case, 3) for case in all_cases(chapters)}
    rec.data["graded"] = {case: {k: [] for k in keys} for case, keys in tops.items()}
    print("  top 3 per case (do_bench):", json.dumps(tops, indent=1), flush=True)
    fns = {}
    for r in range(args.runs):
        def one_round(r=r):
            done = 0
            for case, keys in tops.items():
                ex, bar = exercise_for(case)
                for k in keys:
                    if rec.elapsed() > args.budget:
                        rec.data["skipped"][f"graded round {r + 1}"] = (
                            f"stopped after {done} runs: {rec.elapsed():.0f} s, budget {args.budget:.0f} s")
                        return done
                    c = cands_by_key[k]
                    fns.setdefault(k, graded_fn(c))
                    try:
                        res = measure_speed(ex, fns[k], bar)
                        row = {"speedup": round(res.speedup, 4), "ms": round(res.ms, 5),
                               "baseline_ms": round(res.baseline_ms, 5), "rate": round(res.rate(), 1),
                               "size": res.size}
                        print(f"  round {r + 1} {case} | {k.split(' | ')[1]}: {res.speedup:.3f}x "
                              f"({res.rate():.0f} TFLOP/s)", flush=True)
                    except Exception as exc:  # noqa: BLE001
                        row = {"error": f"{type(exc).__name__}: {sk._first_lines(exc, 3, 300)}"}
                        print(f"  round {r + 1} {case} | {k}: {row['error']}", flush=True)
                    rec.data["graded"][case][k].append(row)
                    done += 1
                    heartbeat_now()
                    if DRY:
                        return done
            return done
        if rec.elapsed() > args.budget:
            rec.data["skipped"][f"graded round {r + 1}"] = f"not started: {rec.elapsed():.0f} s, budget {args.budget:.0f} s"
            break
        rec.part(f"graded path (measure_speed), round {r + 1}", one_round)
        write_tables(rec, chapters)
        if DRY:
            break


# ------------------------------------------------------------------------------------------- output

def graded_summary(rec: Record, case: str, key: str) -> tuple[str, float | None]:
    runs = [r["speedup"] for r in (rec.data.get("graded") or {}).get(case, {}).get(key, []) if "speedup" in r]
    if not runs:
        return "-", None
    s = sorted(runs)
    return f"{s[0]:.3f} / {statistics.median(s):.3f} / {s[-1]:.3f} ({len(s)})", statistics.median(s)


def write_tables(rec: Record, chapters) -> str:
    env = rec.data.get("environment") or {}
    entries = rec.data["candidates"]
    lines = [f"# Issue 19 sweep ({env.get('gpu') or 'no GPU: dry run, nothing measured'}; Triton "
             f"{env.get('triton', '?')}, torch {env.get('torch', '?')})", "",
             f"elapsed {rec.elapsed():.0f} s; ratios are torch's time over the candidate's (do_bench medians, "
             "same process, baseline timed right after); graded = measure_speed min / median / max (runs).", ""]
    for case in all_cases(chapters):
        rows = []
        for k, e in entries.items():
            if case not in case_keys_of(e):
                continue
            r = ratio_in(e, case)
            t = e.get("timing") or {}
            if case.startswith("ch05"):
                t = t.get(case.split()[1]) or {}
            g, _ = graded_summary(rec, case, k)
            chk = e.get("check") or {}
            extra = []
            if chk.get("warps_compiled") and chk["warps_compiled"] != e["num_warps"]:
                extra.append(f"{chk['warps_compiled']} warps compiled")
            if chk.get("spills"):
                extra.append(f"{chk['spills']} B spilled")
            if "registers" in chk:
                extra.append(f"{chk['registers']} regs")
            why = chk.get("why") or chk.get("error") or e.get("timing_error") or ""
            rows.append((r if r is not None else -1.0, e["name"], e["status"], t.get("ms"), t.get("torch_ms") or t.get("flash_ms"),
                         t.get("ratio_default"), t.get("tflops"), g, ", ".join(extra), e.get("note", ""), why))
        rows.sort(key=lambda x: -x[0])
        timed = [x for x in rows if x[0] >= 0]
        lines += [f"## {case}: {len(timed)} timed of {len(rows)}", "",
                  "| # | candidate | ratio | vs SDPA default | ms | torch ms | TFLOP/s | graded | compiled | note |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for i, x in enumerate(timed):
            lines.append(f"| {i + 1} | {x[1]} | {x[0]:.3f} | {x[5] if x[5] is not None else '-'} | {x[3]} | {x[4]} | "
                         f"{x[6]} | {x[7]} | {x[8]} | {x[9]} |")
        failed = [x for x in rows if x[0] < 0 and x[2] not in ("queued", "not reached (sweep deadline)")]
        if failed:
            lines += ["", "Not timed: " + "; ".join(f"{x[1]} ({x[2]}: {x[10][:200]})" for x in failed)]
        lines.append("")
    lines += recommendations(rec, chapters)
    lines += ["", f"errors: {rec.data['errors'] or 'none'}", f"skipped: {rec.data['skipped'] or 'none'}"]
    text = "\n".join(lines) + "\n"
    (rec.out / "sweep_gpu.md").write_text(text)
    return text


def best_score(rec: Record, case: str, key: str) -> float | None:
    """The graded median where measured, else the do_bench ratio."""
    _, g = graded_summary(rec, case, key)
    return g if g is not None else ratio_in(rec.data["candidates"][key], case)


def recommendations(rec: Record, chapters) -> list[str]:
    entries = rec.data["candidates"]
    out = ["## What to ship", ""]
    if "ch05" in chapters:
        cases = [c for c in all_cases(chapters) if c.startswith("ch05")]
        for case in cases:
            keys = [k for k, e in entries.items() if e["chapter"] == "ch05" and ratio_in(e, case) is not None]
            if keys:
                k = max(keys, key=lambda k: best_score(rec, case, k))
                out.append(f"- {case}: best `{entries[k]['name']}` at {best_score(rec, case, k):.3f}x torch.mm: "
                           f"`{entries[k]['config']}`" + ch05_how(entries[k]))
        both = [k for k, e in entries.items() if e["chapter"] == "ch05"
                and all(ratio_in(e, c) is not None for c in cases)]
        if both:
            k = max(both, key=lambda k: min(best_score(rec, c, k) for c in cases))
            e = entries[k]
            out += [f"- ch05, one configuration for both sizes (best worst case, "
                    f"{min(best_score(rec, c, k) for c in cases):.3f}x): `{e['name']}`",
                    f"  `{e['config']}`" + ch05_how(e)]
        out.append("")
    if "ch06" in chapters:
        cases = [c for c in all_cases(chapters) if c.startswith("ch06")]
        by_variant = {}
        for k, e in entries.items():
            if e["chapter"] != "ch06" or ratio_in(e, e["case"]) is None:
                continue
            v = by_variant.setdefault(e["variant"], {})
            s = best_score(rec, e["case"], k)
            if e["case"] not in v or s > v[e["case"]][0]:
                v[e["case"]] = (s, k)
        for variant, best in sorted(by_variant.items()):
            worst = min((best[c][0] for c in cases if c in best), default=None)
            if worst is None:
                continue
            out.append(f"- ch06 variant `{variant}`: worst case {worst:.3f}x SDPA over {len(best)} of {len(cases)} cases; "
                       "per case: " + "; ".join(f"{c}: {best[c][0]:.3f}x `{entries[best[c][1]]['name']}`"
                                                 for c in cases if c in best))
        full = {v: b for v, b in by_variant.items() if all(c in b for c in cases)}
        if full:
            v = max(full, key=lambda v: min(full[v][c][0] for c in cases))
            lines = sorted({entries[full[v][c][1]]["config"] for c in cases})
            cell = {"ptr": "the shipped stretch-fast-solution cell (unchanged kernel)",
                    "tma": "sweep_kernels.CH06_TMA_CELL", "tma-ws": "sweep_kernels.CH06_WS_CELL",
                    "tma-host": "sweep_kernels.CH06_HOST_CELL's kernel (needs a launcher with a pre_hook for "
                                "autotuning: not yet a notebook cell)"}[v]
            out += ["", f"- ch06 ship variant `{v}` ({cell}); worst case "
                        f"{min(full[v][c][0] for c in cases):.3f}x. FAST_CONFIGS (each case's winner; keep the "
                        "smallest for 64 KiB GPUs):", "```python", "FAST_CONFIGS = ["]
            out += [f"    {ln}," for ln in lines]
            out += ["    triton.Config({\"BLOCK_M\": 64, \"BLOCK_N\": 32" +
                    (", \"WARP_SPEC\": False" if v == "tma-ws" else "") + "}, num_warps=4, num_stages=2),",
                    "]", "```"]
    return out


def ch05_how(e: dict) -> str:
    """How the notebook gets this ch05 candidate: a line for the shipped cell, or the kernel change."""
    line = e.get("notebook_line")
    if line:
        return f"\n  shipped kernel as it is; its TMA_CONFIGS line: `{line}`"
    c = e["consts"]
    changes = [what for what, on in (
        ("one program per tile (grid = tiles; no tile loop)", not c["PERSISTENT"]),
        ("tl.range(..., flatten=True) on the tile loop", c["FLATTEN"]),
        ("tl.range(..., warp_specialize=True) on the tile loop", c["WARP_SPEC"]),
        ("the output written in 4 strips", c["TMA_STORE"] and c["SUBTILES"] == 4),
        ("a masked tl.store of the tile instead of the TMA store", not c["TMA_STORE"])) if on]
    return ("\n  needs the kernel change(s): " + "; ".join(changes) +
            " (sweep_kernels.CH05_CELL has them as constexprs; ch05.tma_shared_memory_bytes must learn the store)")


def save(rec: Record) -> None:
    rec.save()


# ------------------------------------------------------------------------------------------- main

_HEARTBEAT = [time.time()]
_POOL: list = [None]      # the sweep's worker pool while it runs (for the watchdog)


def heartbeat_now():
    _HEARTBEAT[0] = time.time()


def watchdog(rec: Record, chapters, limit: float):
    """If nothing progresses for `limit` s (a kernel hanging in this process), write what was measured,
    kill the workers this script started, and exit."""
    def run():
        while True:
            time.sleep(5)
            if time.time() - _HEARTBEAT[0] > limit:
                print(f"\nWATCHDOG: no progress for {limit:.0f} s: writing what was measured and exiting", flush=True)
                rec.data["errors"]["watchdog"] = f"no progress for {limit:.0f} s; exited"
                pool = _POOL[0]
                try:
                    print(write_tables(rec, chapters), flush=True)
                    rec.save()
                finally:
                    if pool is not None:
                        for p in pool.procs.values():
                            p.kill()
                    os._exit(3)
    threading.Thread(target=run, daemon=True).start()


def xcompile_all(rec: Record, cands: list) -> None:
    rows = rec.data["xcompile"] = {}
    for c in cands:
        r = sk.xcompile(c)
        rows[c.key()] = r
        print(f"  {c.key()}: " + (f"ok, {r['shared'] // 1024} KiB, {r['num_warps']} warps, {r.get('registers')} regs, "
                                  f"{r.get('spill_bytes')} B spilled, {r['wgmma']} wgmma, {r['tma_loads']} TMA"
                                  if r["ok"] else f"FAILS: {r['error'][:200]}"), flush=True)
        if len(rows) % 10 == 0:
            rec.save()
    ok = sum(r["ok"] for r in rows.values())
    lines = [f"# sm_90 cross-compile (Triton {__import__('triton').__version__}): {ok} of {len(rows)} compile", "",
             "| candidate | compiles | shared KiB | warps | registers | spilled B | wgmma | TMA copies |",
             "|---|---|---|---|---|---|---|---|"]
    for k, r in rows.items():
        lines.append(f"| {k} | {'yes' if r['ok'] else 'NO: ' + r['error'][:120]} | {r.get('shared', 0) // 1024} | "
                     f"{r.get('num_warps', '')} | {r.get('registers', '')} | {r.get('spill_bytes', '')} | "
                     f"{r.get('wgmma', '')} | {r.get('tma_loads', '')} |")
    (rec.out / "sweep_xcompile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: the interpreter at tiny sizes, nothing measured")
    p.add_argument("--xcompile", action="store_true", help="no GPU: cross-compile every candidate for sm_90")
    p.add_argument("--only", default="ch05,ch06", help="comma-separated: ch05, ch06")
    p.add_argument("--budget", type=float, default=470.0, help="seconds after which no new part starts")
    p.add_argument("--sweep-share", type=float, default=0.45, help="share of the budget for the sweep")
    p.add_argument("--max-ch05", type=int, default=40, help="ch05 candidates, in priority order")
    p.add_argument("--max-ch06", type=int, default=32, help="ch06 candidates per case, in priority order")
    p.add_argument("--runs", type=int, default=5, help="graded-path rounds of each case's top 3")
    p.add_argument("--workers", type=int, default=0, help="compile/check processes (default: CPU cores - 4, <= 12)")
    p.add_argument("--task-timeout", type=float, default=120.0, help="seconds before a worker's task counts as hung")
    args = p.parse_args(argv)
    chapters = [c for c in args.only.split(",") if c]
    out = args.out
    rec = Record(out, "assets/results/issue19/sweep_gpu.py", DRY, candidates={}, args=vars(args) | {"out": str(out)})
    rec.data["environment"] = rec.part("environment", environment)
    env = rec.data["environment"] or {}
    speed_size = tuple(env.get("ch06_speed_size") or (1, 2, DRY_CH06_N, 64))

    cands = []
    if "ch05" in chapters:
        cands += sk.ch05_candidates()[:args.max_ch05]
    if "ch06" in chapters:
        cands += [c for c in sk.ch06_candidates() if c.priority < args.max_ch06]
    # one queue: the two chapters interleaved by rank, so that both advance together
    n5 = max(1, sum(c.chapter == "ch05" for c in cands))
    n6 = max(1, sum(c.chapter == "ch06" for c in cands) // 4)
    cands.sort(key=lambda c: (c.priority / n5) if c.chapter == "ch05" else (c.priority / n6))
    cands_by_key = {c.key(): c for c in cands}
    rec.data["candidate_count"] = {"ch05": sum(c.chapter == "ch05" for c in cands),
                                   "ch06": sum(c.chapter == "ch06" for c in cands)}

    if args.xcompile:
        rec.part("cross-compile for sm_90", lambda: xcompile_all(rec, cands))
        rec.save()
        return 0

    watchdog(rec, chapters, 240.0)
    timer = Timer(DRY, speed_size)
    if not DRY and "ch06" in chapters:
        rec.data["sdpa_backends_ms"] = rec.part("SDPA backends (which one the default call is)",
                                                lambda: sdpa_backends(timer))
    heartbeat_now()
    rec.part("sweep: compile and check in workers, time here",
             lambda: sweep(rec, cands, speed_size, args, timer, heartbeat_now, chapters))
    write_tables(rec, chapters)
    rec.save()
    if rec.elapsed() <= args.budget:
        graded_rounds(rec, cands_by_key, chapters, args)
    else:
        rec.data["skipped"]["graded path"] = "budget spent by the sweep"
    text = write_tables(rec, chapters)
    rec.save()
    print("\n" + text, flush=True)
    print(f"wrote {out / 'sweep_gpu.json'} and {out / 'sweep_gpu.md'} after {rec.elapsed():.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
