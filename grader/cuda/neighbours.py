"""The other processes on the GPU while a speed verdict is timed, read through NVML (nvidia-ml-py).

A speed verdict is a ratio of two times taken on one GPU. A process the grader did not start that computes on
the same GPU meanwhile (a learner's detached helper that loads it while the launcher is idle, another user's
job, a leftover of an earlier student) changes both, or one more than the other: on an H200 a helper
multiplying 8192-square fp16 matrices slowed `torch.mm` from 0.195 to 0.431 ms and a 5a kernel from 0.324 to
0.710 ms, and no report said so. So the timing backend (grader.harness.timing.BatchBackend) reads the GPU's
compute processes before the timing and after every batch, with the SM utilization NVML samples for each
process, and the harness measures again a verdict timed beside another busy process, then reports what it saw
(grader.harness.exercise.measure_speed, SpeedResult.report).

Who is whose:
- *ours*: the processes that run the timed calls, this process (torch's side, and the learner's in the
  notebook's kernel) and the worker that runs the learner's function (grader.isolation.remote);
- a process NVML samples as busy on the SM during the timing that is not ours is a neighbour, whoever started
  it: the notebook's kernel and a check's idle processes hold a context on the GPU but compute nothing while a
  speed check runs, and show no utilization;
- where NVML samples no per-process utilization (some GPUs and drivers), a process that appeared on the GPU
  during the timing and is not ours counts instead;
- in a container NVML gives process ids of the host's namespace, which match none of this one's: then ours
  cannot be named, and busy processes beyond the number of ours count.

Where NVML cannot be read (no driver, a CPU machine, a sandbox) the reading says why and nothing else changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import clocks


@dataclass
class Neighbour:
    pid: int
    name: str
    used_mib: float | None = None   # its GPU memory, where NVML tells it
    sm_pct: int = 0                 # the highest SM utilization NVML sampled for it during the timing
    new: bool = False               # not on the GPU when the timing began

    def describe(self) -> str:
        parts = [f"{self.used_mib:,.0f} MiB" if self.used_mib is not None else None,
                 f"up to {self.sm_pct}% of the SMs" if self.sm_pct else None,
                 "started during the timing" if self.new else None]
        extra = ", ".join(p for p in parts if p)
        return f"pid {self.pid} ({self.name}{', ' + extra if extra else ''})"

    def as_dict(self) -> dict:
        return {"pid": self.pid, "name": self.name, "used_mib": self.used_mib, "sm_pct": self.sm_pct,
                "new": self.new}


@dataclass
class Neighbours:
    """What NVML said of the GPU's processes over one timing: `begin()` before it, `sample()` after each batch."""
    ours: set[int] = field(default_factory=lambda: {os.getpid()})
    seen: dict[int, Neighbour] = field(default_factory=dict)   # every process seen on the GPU but ours
    readings: int = 0
    utilization: bool = False          # NVML sampled per-process SM utilization during the timing
    same_namespace: bool = True        # NVML's process ids are this PID namespace's
    note: str | None = None            # why the processes could not be read
    _before: set[int] = field(default_factory=set)
    _since: int = 0                    # NVML's timestamp (microseconds) of the last utilization sample read

    def add_ours(self, pid: int | None) -> None:
        if pid is not None:
            self.ours.add(int(pid))

    def begin(self) -> None:
        handle = clocks.handle()
        if handle is None:
            self.note = clocks.why_not()
            return
        listed = _running(handle)
        if listed is None:
            self.note = "NVML lists no processes on this GPU here"
            return
        self._before = set(listed)
        self._since = _now_us(handle)

    def sample(self) -> None:
        if self.note is not None:
            return
        handle = clocks.handle()
        listed = _running(handle)
        if listed is None:
            return
        self.readings += 1
        busy, self._since, readable = _busy(handle, self._since)
        self.utilization = self.utilization or readable
        if listed and not any(pid in self.ours for pid in listed) and not any(_visible(pid) for pid in listed):
            self.same_namespace = False
        for pid in set(listed) | set(busy):
            if pid in self.ours:
                continue
            n = self.seen.get(pid) or Neighbour(pid, _name(pid), new=pid not in self._before)
            n.used_mib = listed.get(pid, n.used_mib)
            n.sm_pct = max(n.sm_pct, busy.get(pid, 0))
            self.seen[pid] = n

    @property
    def crowding(self) -> list[Neighbour]:
        """The processes that computed on the GPU during the timing and are not ours (see the module's notes). In
        another PID namespace, every process sampled busy, ours among them, once more were busy than ours."""
        if self.utilization:
            busy = [n for n in self.seen.values() if n.sm_pct]
            if not self.same_namespace:
                return busy if len(busy) > len(self.ours) else []
            return busy
        return [n for n in self.seen.values() if n.new]

    @property
    def crowded(self) -> bool:
        return bool(self.crowding)

    def describe(self) -> str:
        if self.note is not None:
            return f"other processes on the GPU not read ({self.note})"
        crowding = self.crowding
        if not crowding:
            how = "computed" if self.utilization else "started"
            return f"no other process {how} on the GPU while it was timed ({self.readings} readings)"
        shown = "; ".join(n.describe() for n in crowding[:4]) + (f"; and {len(crowding) - 4} more"
                                                                  if len(crowding) > 4 else "")
        if not self.same_namespace:
            return (f"{len(crowding)} processes computed on the GPU while it was timed, {len(self.ours)} of them "
                    f"the grader's; NVML names them by another PID namespace's ids (a container), so which cannot "
                    f"be told: {shown}")
        return (f"{len(crowding)} other process(es) computed on the GPU while it was timed, not the grader's "
                f"for this timing: {shown}")

    def as_dict(self) -> dict:
        return {"readings": self.readings, "crowded": self.crowded, "utilization": self.utilization,
                "same_namespace": self.same_namespace, "note": self.note,
                "others": [n.as_dict() for n in self.crowding]}


def _running(handle) -> dict[int, float | None] | None:
    """pid -> MiB (None where NVML does not say) of every compute process on the GPU; None where unreadable."""
    import pynvml

    found: dict[int, float | None] = {}
    readable = False
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetMPSComputeRunningProcesses"):
        fn = getattr(pynvml, getter, None)
        if fn is None:
            continue
        try:
            for p in fn(handle):
                used = getattr(p, "usedGpuMemory", None)
                found[int(p.pid)] = None if used in (None, getattr(pynvml, "NVML_VALUE_NOT_AVAILABLE", -1)) \
                    else used / 2**20
            readable = True
        except Exception:  # noqa: BLE001 - not supported here (MPS off, a sandbox): the other getter may be
            continue
    return found if readable else None


def _busy(handle, since: int) -> tuple[dict[int, int], int, bool]:
    """({pid: highest SM %} of the processes NVML sampled busy since `since`, the newest sample's timestamp,
    whether NVML samples per-process utilization at all)."""
    import pynvml

    try:
        samples = pynvml.nvmlDeviceGetProcessUtilization(handle, since)
    except Exception as exc:  # noqa: BLE001
        if getattr(exc, "value", None) == pynvml.NVML_ERROR_NOT_FOUND:   # no sample since `since`: none busy
            return {}, since, True
        return {}, since, False
    busy: dict[int, int] = {}
    newest = since
    for s in samples:
        newest = max(newest, int(s.timeStamp))
        if int(s.timeStamp) > since and int(s.smUtil) > 0:
            busy[int(s.pid)] = max(busy.get(int(s.pid), 0), int(s.smUtil))
    return busy, newest, True


def _now_us(handle) -> int:
    """The newest utilization sample's timestamp now: samples after it fall in the timing."""
    _, newest, _ = _busy(handle, 0)
    return newest


def _visible(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = [w.decode("utf-8", "replace") for w in f.read().split(b"\0") if w]
        if words:
            text = " ".join(words)
            return text if len(text) <= 80 else text[:77] + "..."
    except OSError:
        pass
    try:
        import pynvml

        name = pynvml.nvmlSystemGetProcessName(pid)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001
        return "?"
