"""What the processes of a class grading did and waited in, from the samples run.sh keeps: side by side for
runs of the same students alone and several at once, per student, so that what grows with the workers shows.

    python3 waits.py RUN_DIR...      (each with ps.txt.gz, and pyspy.txt.gz where PYSPY=1 ran)

- ps.txt.gz: every process twice a second (`ps -e -o pid=,ppid=,stat=,wchan:32=,args=`, after a line "@ TIME").
  Per kind of process (the ladder grade command, Dask, notebook kernels, isolated checks' processes, nbgrader),
  process-seconds running, in uninterruptible sleep (disk, the driver) and asleep, and the kernel functions they
  slept in most.
- pyspy.txt.gz: py-spy's folded stacks (`record --format raw --subprocesses --idle`), one line a stack and its
  count. Per kind of process and innermost frame of the course's own code (grader/), the seconds of threads
  there; a frame whose seconds grow with the workers while the CPU stays idle is what they wait on together.
  Then the samples inside torch, CuPy and Triton (where CUDA's calls, and the driver's locks, are), by the
  course's frame that made the call.

Hand-written: ps and py-spy sample; nothing reads the samples back into these tables.
"""

from __future__ import annotations

import collections
import gzip
import json
import sys
from pathlib import Path

PS_INTERVAL_S = 0.5      # run.sh's sampler
PYSPY_RATE_HZ = 20       # run.sh's py-spy --rate

# The kind of a process, by what its command line names first (the forked verifiers keep their server's).
# A check's worker is a multiprocessing child of its verifier (`spawn_main`), as a Dask nanny's worker is of the
# nanny: ps tells them apart by the parent, py-spy's stacks cannot.
KINDS = (("resource_tracker", "multiprocessing's resource tracker"), ("spawn_main", "spawned: check worker or Dask worker"),
         ("grader.isolation.server", "verifier (forked from its server)"), ("ipykernel", "notebook kernel"),
         ("nbgrader", "nbgrader"), ("grader.cli grade", "ladder grade"), ("distributed", "dask"), ("dask", "dask"),
         ("py-spy", None), ("ps -e", None))


def kind_of(args: str) -> str | None:
    """The kind of process a command line is, or None for what the measurement itself runs."""
    for needle, kind in KINDS:
        if needle in args:
            return kind
    return "python (other)" if "python" in args else "other"


def _open(path: Path):
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path)


def ps_table(path: Path) -> dict[str, collections.Counter]:
    """{kind: Counter of 'running' / 'disk or driver' / 'asleep: WCHAN'} in process-seconds."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with _open(path) as lines:
        for snapshot in _snapshots(lines):
            for kind, stat, wchan in snapshot:
                if stat.startswith("R"):
                    state = "running"
                elif stat.startswith("D"):
                    state = f"disk or driver: {wchan}"
                else:
                    state = f"asleep: {wchan}"
                table[kind][state] += PS_INTERVAL_S
    return table


def _snapshots(lines):
    """Each sample's processes as (kind, stat, wchan), a spawned process named by its parent's kind."""
    rows: list[tuple[str, str, str, str, str]] = []
    for line in list(lines) + ["@ end"]:
        if line.startswith("@"):
            if rows:
                args_of = {pid: args for pid, _, _, _, args in rows}
                snapshot = []
                for pid, ppid, stat, wchan, args in rows:
                    kind = kind_of(args)
                    if kind and kind.startswith("spawned"):
                        parent = kind_of(args_of.get(ppid, ""))
                        kind = "check worker" if parent and parent.startswith("verifier") else "dask worker"
                    if kind is not None and kind != "other":
                        snapshot.append((kind, stat, wchan))
                yield snapshot
            rows = []
            continue
        parts = line.split(None, 4)
        if len(parts) == 5:
            rows.append(tuple(parts))


def _frame_file(frame: str) -> str:
    return frame[frame.rfind("(") + 1:].rstrip(")") if "(" in frame else ""


# Where a check's process calls into CUDA: time spent inside these libraries (the driver's calls run under them)
LIBRARIES = ("torch/", "cupy/", "cupy_backends/", "triton/")


def _stacks(path: Path):
    """(kind, frames of the sampled process itself, seconds) for each folded stack. With --subprocesses, a stack
    starts with the chain of processes down to the sampled one: its kind is that of the last of them."""
    with _open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            if not stack or not count.isdigit():
                continue
            parts = stack.split(";")
            starts = [i for i, f in enumerate(parts) if f.startswith("process ")]
            kind = kind_of(parts[starts[-1]]) if starts else "ladder grade"
            if kind is None:
                continue
            frames = [f for f in parts[starts[-1] + 1 if starts else 0:] if not f.startswith("thread ")]
            if frames:
                yield kind, frames, int(count) / PYSPY_RATE_HZ


def pyspy_table(path: Path) -> dict[tuple[str, str], float]:
    """{(kind, innermost frame of grader/ code, or the innermost frame): thread-seconds}."""
    table: dict[tuple[str, str], float] = collections.Counter()
    for kind, frames, seconds in _stacks(path):
        ours = [f for f in frames if "grader/" in _frame_file(f)]
        table[(kind, ours[-1] if ours else frames[-1])] += seconds
    return table


def library_table(path: Path) -> dict[tuple[str, str], float]:
    """{(kind, "library frame < the course's frame that called it"): thread-seconds} for the samples whose
    innermost frame is in torch, CuPy or Triton: where the checks' processes sat in CUDA's calls."""
    table: dict[tuple[str, str], float] = collections.Counter()
    for kind, frames, seconds in _stacks(path):
        if not any(lib in _frame_file(frames[-1]) for lib in LIBRARIES):
            continue
        ours = [f for f in frames if "grader/" in _frame_file(f)]
        table[(kind, f"{frames[-1]} < {ours[-1] if ours else '-'}")] += seconds
    return table


def students(run: Path) -> int:
    record = run / "record.json"
    return max(1, len(json.loads(record.read_text()).get("students", []))) if record.exists() else 1


def _table(title: str, header: str, per: dict[str, dict], top: int, cell) -> list[str]:
    """A Markdown table of the `top` rows that are largest in any run, one column a run."""
    rows = collections.Counter()
    for table in per.values():
        for key, seconds in table.items():
            rows[key] = max(rows[key], seconds)
    out = [title, "", f"| {header} | " + " | ".join(per) + " |", "|---|---|" + "---|" * len(per)]
    for key, _ in rows.most_common(top):
        out.append(f"| {cell(key)} | " + " | ".join(f"{per[n].get(key, 0.0):.1f}" for n in per) + " |")
    return out + [""]


def report(runs: list[Path], top: int = 25) -> str:
    count = {r.name: students(r) for r in runs}
    out = ["# What the processes did, per student", "",
           "Seconds per student (process-seconds from ps, thread-seconds from py-spy); students in each run: "
           + ", ".join(f"{name} {n}" for name, n in count.items()) + ".", ""]
    ps = {r.name: {(kind, state): seconds / count[r.name] for kind, states in ps_table(r / "ps.txt.gz").items()
                   for state, seconds in states.items()}
          for r in runs if (r / "ps.txt.gz").exists()}
    if ps:
        out += _table("## ps: state, and where asleep", "kind | state", ps, top, lambda k: f"{k[0]} | {k[1]}")
    spy = {r.name: {key: seconds / count[r.name] for key, seconds in pyspy_table(r / "pyspy.txt.gz").items()}
           for r in runs if (r / "pyspy.txt.gz").exists()}
    if spy:
        out += _table("## py-spy: the innermost frame of the course's code", "kind | frame", spy, top,
                      lambda k: f"{k[0]} | `{k[1]}`")
        inside = {r.name: {key: seconds / count[r.name] for key, seconds in library_table(r / "pyspy.txt.gz").items()}
                  for r in runs if (r / "pyspy.txt.gz").exists()}
        out += _table("## py-spy: inside torch, CuPy and Triton, by the course's frame that called them",
                      "kind | library frame < course frame", inside, top, lambda k: f"{k[0]} | `{k[1]}`")
    missing = [name for name in count if name not in ps and name not in spy]
    if missing:
        out.append(f"No samples in: {', '.join(missing)}.")
    return "\n".join(out)


if __name__ == "__main__":
    print(report([Path(a) for a in sys.argv[1:]]))
