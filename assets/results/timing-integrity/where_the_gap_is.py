"""Where a timed request's time goes outside its CUDA events: 5a's solution (and 1a's) timed in this process,
each piece of grader.isolation.facts.run_batch timed on its own, for batches of 0, 1, 16 and 64 calls.

    python assets/results/timing-integrity/where_the_gap_is.py > OUT.txt
"""
from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import torch  # noqa: E402

from grader.chapters import ch01, ch05  # noqa: E402
from grader.harness import correctness  # noqa: E402
from grader.isolation import facts  # noqa: E402
from submissions.build import launchers  # noqa: E402

SPENT: dict[str, float] = {}


def timed(module, name):
    real = getattr(module, name)

    @functools.wraps(real)
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + (time.perf_counter() - t0) * 1e3
    setattr(module, name, wrapper)


for name in ("tampered", "_stray", "_l2_limit", "reset_l2", "_threads", "sync_or_broken", "_facts"):
    timed(facts, name)
real_sync = facts.CLOCKS.sync


def sync():
    t0 = time.perf_counter()
    real_sync()
    SPENT["CLOCKS.sync"] = SPENT.get("CLOCKS.sync", 0.0) + (time.perf_counter() - t0) * 1e3


facts.CLOCKS.sync = sync
real_elapsed = facts.CLOCKS.elapsed


def cases():
    a5 = launchers("ch05", "correct", ["matmul-solution"])["matmul"]
    yield "5a solution", a5, ch05.MATMUL, (4096, 4096, 4096)
    a1 = launchers("ch01", "correct", ["vector-add-solution"])["vector_add"]
    yield "1a solution", a1, ch01.VECTOR_ADD, ch01.VECTOR_ADD.speed_size()


import gc  # noqa: E402

for label, fn, ex, size in cases():
    gen, _ = correctness.fresh_generator("cuda")
    sets = []
    for _ in range(2):
        inputs = ex.make_inputs(size, gen, "cuda")
        sets.append(tuple(inputs) + (ex.make_output(size, "cuda"),))
    for reps in (1, 1, 0, 16, 0, 64, 0, 16):
        SPENT.clear()
        torch.cuda.synchronize()
        gc.disable()
        t0 = time.perf_counter()
        bf = facts.run_batch(fn, sets, {}, reps)
        wall = (time.perf_counter() - t0) * 1e3
        gc.enable()
        pieces = " ".join(f"{k}={v:.3f}" for k, v in sorted(SPENT.items()))
        print(f"{label} reps={reps:3d} wall={wall:8.3f} events={bf.event_ms:8.3f} host={bf.host_ms:8.3f} "
              f"wall-events={wall - bf.event_ms:7.3f} | {pieces}", flush=True)

# The same pieces inside the harness's own timing (measure_speed, in this process): each request as the seam
# times it, with what the pieces of run_batch took, and the flush and poisoning between requests.
from grader.harness import exercise  # noqa: E402
from grader.isolation import seam  # noqa: E402

real_request = seam.Batch._timed_request


def logged(self, reps, traced):
    SPENT.clear()
    facts_, wall = real_request(self, reps, traced)
    pieces = " ".join(f"{k}={v:.3f}" for k, v in sorted(SPENT.items()))
    print(f"  harness reps={reps:4d} traced={int(traced)} wall={wall:8.3f} events={facts_.event_ms:8.3f} "
          f"wall-events={wall - facts_.event_ms:7.3f} | {pieces}", flush=True)
    return facts_, wall


seam.Batch._timed_request = logged
for label, fn, ex, size in cases():
    print(label, "through measure_speed", flush=True)
    r = exercise.measure_speed(ex, fn, "5a" if ex is ch05.MATMUL else "1a")
    print(r.report(), flush=True)
