"""What a traced batch of the learner's calls says about where each call's time went: the learner's
kernels (names, launches and GPU time per call), the fills and copies beside them, the launcher's host
time, and the gap between the kernels' time and the call's. When the kernels alone would clear the bar
and the call does not, the likely cause, from what the trace counted: a synchronize, printing, a copy
between host and device, an allocation, a launch per element, or host work between launches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..calls.foreign import short

# More launches than this per call is a launch per row or per element, not a kernel design.
MANY_LAUNCHES = 32


@dataclass
class KernelRow:
    name: str
    launches: float       # per call
    ms: float             # GPU time per call
    grid: tuple | None = None
    block: tuple | None = None


@dataclass
class KernelTime:
    """Per call of the learner's launcher, from one traced batch of `calls` calls."""
    calls: int
    rows: list[KernelRow] = field(default_factory=list)    # the learner's kernels, longest first
    other_ms: float = 0.0        # fills, copies and memsets per call
    busy_ms: float = 0.0         # the device busy with anything, overlaps counted once
    host_ms: float = 0.0         # host time inside the launcher per call (traced): Python, launches, waits
    syncs: float = 0.0           # per call
    allocs: float = 0.0
    host_copies: float = 0.0
    printed: float = 0.0         # characters per call
    note: str | None = None      # why there is no trace (then only `note` is meaningful)

    @property
    def kernel_ms(self) -> float:
        return sum(r.ms for r in self.rows)

    @property
    def launches(self) -> float:
        return sum(r.launches for r in self.rows)

    @classmethod
    def untraced(cls, why: str) -> "KernelTime":
        return cls(calls=0, note=why)

    @classmethod
    def from_batch(cls, facts, reps: int) -> "KernelTime":
        """From a traced batch's facts (grader.calls.messages.BatchFacts) of `reps` calls."""
        device = facts.device
        if device is None or not device.traced:
            return cls.untraced(device.note if device is not None else "not traced")
        reps = max(1, reps)
        rows, other_us = [], 0.0
        for op in device.ops:
            if op.kind == "kernel" and facts.own_launches.get(op.name):
                rows.append(KernelRow(op.name, op.count / reps, op.total_us / reps / 1e3, op.grid, op.block))
            else:
                other_us += op.total_us
        rows.sort(key=lambda r: -r.ms)
        return cls(calls=reps, rows=rows, other_ms=other_us / reps / 1e3, busy_ms=device.busy_us / reps / 1e3,
                   host_ms=facts.launcher_ms / reps, syncs=device.calls.get("sync", 0) / reps,
                   allocs=device.calls.get("alloc", 0) / reps, host_copies=device.host_copies / reps,
                   printed=facts.printed / reps)

    # ------------------------------------------------------------------------------ the report

    def causes(self) -> list[str]:
        """What the trace counted that makes a call slower than its kernels, most telling first."""
        found = []
        if self.syncs >= 1:
            found.append(f"a synchronize in your launcher ({self.syncs:.3g} per call): it waits for the GPU every "
                         "call, so the next launch cannot be queued behind the running kernel")
        if self.printed > 0:
            found.append(f"printing ({self.printed:,.0f} characters per call): output is slow host work")
        if self.host_copies >= 1:
            found.append(f"a copy between host and device ({self.host_copies:.3g} per call), which also waits")
        if self.allocs >= 1:
            found.append(f"device memory allocated or freed ({self.allocs:.3g} cudaMalloc/cudaFree per call): "
                         "allocate once, outside the launcher, or use torch's allocator")
        if self.launches > MANY_LAUNCHES:
            found.append(f"a launch per row or element ({self.launches:,.0f} kernel launches per call): launch "
                         "once over the whole problem")
        if not found:
            found.append(f"host work in your launcher ({self.host_ms:.3f} ms per call on the host): Python "
                         "between launches, argument conversion, or compiling")
        return found

    def lines(self, call_ms: float, baseline_ms: float, baseline_name: str, bar: float, passed: bool,
              graded_at=None, bar_text: str | None = None) -> list[str]:
        """The speed report's lines about kernels, for a call that took `call_ms` (untraced median). `graded_at(ms)`
        gives the figure the bar judges, and its words, had a call taken `ms` (default: the speedup over the
        baseline); `bar_text`, the bar in words."""
        if self.note is not None:
            return [f"  device trace: not available here ({self.note}); the grader's other checks still apply"]
        out = []
        for r in self.rows[:4]:
            shape = f", grid {r.grid} block {r.block}" if r.grid and r.block else ""
            out.append(f"  {'kernel':<16}{r.ms:9.3f} ms per call  {short(r.name, 40)} "
                       f"(×{r.launches:g} per call{shape})")
        if len(self.rows) > 4:
            out.append(f"  {'':<16}… and {len(self.rows) - 4} more kernels")
        gap = max(0.0, call_ms - self.busy_ms)
        launches = f"{self.launches:g} launch{'' if self.launches == 1 else 'es'}"
        out.append(f"  {'kernels alone':<16}{self.kernel_ms:9.3f} ms per call ({launches}; fills and copies "
                   f"{self.other_ms:.3f} ms); outside them {gap:.3f} ms per call; host time in your launcher "
                   f"{self.host_ms:.3f} ms per call")
        if graded_at is None:
            graded_at = lambda ms: (baseline_ms / ms, f"{baseline_ms / ms:.2f}x {baseline_name}")  # noqa: E731
        alone, alone_text = graded_at(self.kernel_ms) if self.kernel_ms > 0 else (0.0, "")
        if not passed and alone >= bar:
            out.append(f"  ⓘ your kernels alone would clear the bar ({alone_text}, bar {bar_text or f'{bar:.2f}x'}); the "
                       f"call does not, because {gap:.3f} ms of each call is spent outside them. Likely cause: "
                       + "; ".join(self.causes()) + ".")
        out.append(f"  device trace: a traced batch of {self.calls} calls after timing (timed batches run untraced, so "
                   "tracing cannot move the ratio)")
        return out
