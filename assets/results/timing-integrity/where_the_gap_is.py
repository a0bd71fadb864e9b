"""Where a timed request's time goes outside its CUDA events, on both graded paths.

    LADDER_PROBE_DIR=DIR PYTHONPATH=assets/results/timing-integrity/probe \
        python assets/results/timing-integrity/where_the_gap_is.py DIR > DIR/gap.txt
    python assets/results/timing-integrity/where_the_gap_is.py --timeline DIR > timeline.txt   (no GPU needed)
    python assets/results/timing-integrity/where_the_gap_is.py --summary DIR > summary.txt     (no GPU needed)

Part A times grader.calls.facts.run_batch directly (batches of 0, 16 and 64 calls of chapter 1's 1b solution),
before and after one traced call (torch.profiler, as every checked launcher call is traced), to see whether a
process that has traced once keeps paying for it. Parts B and C grade three speed cells through `measure_speed`, in
this process (as a notebook and `ladder check` do) and in a grader worker (as `ladder grade` does), with the probe
(probe/sitecustomize.py) logging the functions a request passes through in every process. `--timeline` merges the
logs: for every timed request of the asking process, where its wall time went, per process; `--summary` the
figures the records quote.
"""
from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def requests(folder: Path):
    """The asking process's timed requests in the probe logs, in time order: (its header, the pieces of it that
    every process logged, each "  OFFSET_MS  asker|worker >|< FUNCTION ...")."""
    events = []
    for log in sorted(folder.glob("probe-*.log")):
        pid = log.stem.split("-")[1]
        for line in log.read_text().splitlines():
            t, kind, rest = line.split(" ", 2)
            events.append((int(t), pid, kind, rest))
    events.sort()
    asker = None
    for t, pid, kind, rest in events:
        if kind == ">" and rest.startswith("Batch._timed_request"):
            asker, t0, window = pid, t, []
            continue
        if asker is None:
            continue
        if pid == asker and kind == "<" and rest.startswith("Batch._timed_request"):
            yield (f"request {rest.split(' ', 1)[1]}  ({(t - t0) / 1e6:.3f} ms)",
                   [f"   {(tt - t0) / 1e6:9.3f}  {'asker ' if p == asker else 'worker'} {k} {r}" for tt, p, k, r in window])
            asker = None
            continue
        window.append((t, pid, kind, rest))


def timeline(folder: Path) -> None:
    for header, pieces in requests(folder):
        print(header)
        for line in pieces:
            print(line)


def cells_namespace(rung) -> dict:
    """A rung's learner cells run in this process, as a notebook runs them."""
    from grader.notebooks.calibrate import rung_cells
    from submissions.build import run_cell

    ns: dict = {"__name__": "__main__"}
    for name, source in rung_cells(ROOT, rung):
        run_cell(source, ns, f"<{rung.chapter} {rung.submission} {name}>")
    return ns


def part_a() -> None:
    import torch

    from grader.chapters import ch01
    from grader.harness import correctness
    from grader.calls import facts
    from grader.calls.messages import CallPolicy
    from grader.harness.calibration import rungs

    rung = next(r for r in rungs(["ch01"]) if r.label.startswith("1b fused"))
    fn = cells_namespace(rung)[rung.launcher]
    ex = ch01.FUSED
    size = ex.speed_size()
    gen, _ = correctness.fresh_generator("cuda")
    sets = [tuple(ex.make_inputs(size, gen, "cuda")) + (ex.make_output(size, "cuda"),) for _ in range(2)]

    def loop(label):
        for reps in (1, 0, 16, 0, 64, 0, 16):
            torch.cuda.synchronize()
            gc.disable()
            t0 = time.perf_counter()
            bf = facts.run_batch(fn, sets, {}, reps)
            wall = (time.perf_counter() - t0) * 1e3
            gc.enable()
            print(f"A {label:14s} reps={reps:3d} wall={wall:8.3f} events={bf.event_ms:8.3f} "
                  f"wall-events={wall - bf.event_ms:7.3f}", flush=True)

    loop("never traced")
    facts.run_call(fn, sets[0], {}, CallPolicy(launcher=True))   # a checked launcher call: traced on the device
    loop("after a trace")
    loop("again")


def parts_b_c() -> None:
    from grader.harness.calibration import rungs
    from grader.harness.exercise import check_correctness, measure_speed
    from grader.isolation.remote import RemoteFunction, WorkerHandle
    from grader.notebooks.calibrate import rung_cells
    from grader.chapters import ch01, ch05  # noqa: F401 - the rungs' exercises are expressions over these
    chosen = [r for r in rungs(["ch01", "ch05"]) if r.label.startswith(("1a one element", "1b fused", "5a grouped"))]
    for rung in chosen:
        ex = eval(rung.exercise)
        for where in ("in-process", "isolated"):
            handle = None
            if where == "isolated":
                handle = WorkerHandle("spawn")
                loaded = handle.load(rung_cells(ROOT, rung), {})
                assert not loaded.problems, loaded.problems
                fn = RemoteFunction(handle, rung.launcher)
            else:
                fn = cells_namespace(rung)[rung.launcher]
            try:
                check_correctness(ex, fn, trials=1, verbose=False)
                t0 = time.perf_counter()
                r = measure_speed(ex, fn, rung.bar)
                print(f"{where} {rung.label}: {r.speedup:.3f}x, integrity {r.integrity} ({time.perf_counter() - t0:.1f} s)",
                      flush=True)
            finally:
                if handle is not None:
                    handle.close()


def summary(folder: Path) -> None:
    """From the probe logs: how far each timed request's wall time, less the zero-call request just before it, lies
    from its events; and, per piece of a request in the worker, the median, 90th percentile and worst time."""
    import re
    import statistics

    blocks = [[header, *pieces] for header, pieces in requests(folder)]

    def at(block, pattern):
        hits = [float(x.split()[0]) for x in block[1:] if pattern in x]
        return hits[0] if hits else None

    gaps, empty = [], None
    pieces = {"the worker woken by a request": ("asker  < Connection._send_bytes", "worker < Connection._recv_bytes"),
              "the asker woken by its reader thread": ("< WorkerHandle._receive.<locals>.read", "> safe_loads"),
              "starting the reader thread": ("asker  > WorkerHandle._receive", "> WorkerHandle._receive.<locals>.read"),
              "the watch (Watch.changed)": ("> Watch.changed", "< Watch.changed"),
              "reset_l2 (waits for the copies in)": ("> reset_l2", "< reset_l2")}
    spans: dict[str, list[float]] = {k: [] for k in pieces}
    for block in blocks:
        wall, events = map(float, re.findall(r"wall=([\d.]+) events=([\d.]+)", block[0])[0])
        if events < 0.25:   # a zero-call request (its events cover two event records)
            empty = wall
            continue
        if empty is not None:   # a timed request (a traced one has no zero-call request before it)
            gaps.append(wall - empty - events)
        empty = None
        if any("worker" in x for x in block):
            for name, (a, b) in pieces.items():
                ta, tb = at(block, a), at(block, b)
                if ta is not None and tb is not None:
                    spans[name].append(tb - ta)
    gaps.sort()
    print(f"{len(gaps)} timed requests, each less the zero-call request before it, against its events (ms):")
    print(f"  median {statistics.median(gaps):+.3f}, 5th percentile {gaps[len(gaps) // 20]:+.3f}, 95th "
          f"{gaps[-1 - len(gaps) // 20]:+.3f}, least {gaps[0]:+.3f}, most {gaps[-1]:+.3f}; "
          f"{sum(abs(g) > 2 for g in gaps)} beyond ±2 ms")
    print("pieces of the requests to a worker (ms):")
    for name, values in spans.items():
        values.sort()
        if values:
            print(f"  {name:40s} n={len(values):3d} median {statistics.median(values):.3f}  "
                  f"90th {values[int(0.9 * len(values))]:.3f}  worst {values[-1]:.3f}  over 2 ms: {sum(v > 2 for v in values)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--timeline"]:
        timeline(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["--summary"]:
        summary(Path(sys.argv[2]))
    else:
        part_a()
        parts_b_c()
