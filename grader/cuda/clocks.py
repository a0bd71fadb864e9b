"""The GPU's SM clock and why it is held down, read through NVML (nvidia-ml-py, NVIDIA's own binding).

A speed verdict is a ratio of two times measured minutes apart at most, yet a sustained tensor-core
GEMM on an H100 is power-limited and its clock moves between batches, and a hot or power-braked GPU
runs everything slower. The grader therefore reads the SM clock and the clock-event ("throttle")
reasons around every speed verdict, records them in the report and in `ladder check --json`, and
measures again a verdict taken while the GPU was held down by heat or power (grader.harness.exercise).

NVML counts GPUs in its own order, which `CUDA_VISIBLE_DEVICES` does not change: the device is found by
the UUID CUDA reports for device 0. Where NVML cannot be read (no driver, a CPU machine, a sandbox that
hides it) `read()` returns a `ClockState` that says why, and nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# nvmlClocksEventReason* bits (nvml.h); the names are NVIDIA's, shortened.
REASONS = {
    0x1: "idle", 0x2: "application clocks", 0x4: "power cap", 0x8: "hardware slowdown", 0x10: "sync boost",
    0x20: "thermal (software)", 0x40: "thermal (hardware)", 0x80: "power brake", 0x100: "display clocks",
}
# Held down by heat or by the hardware's power brake: a verdict taken then is measured again. The software
# power cap is recorded and reported, not measured again: on an H100 every reading during 5a's timing (48 of
# 48, the learner's batches and torch.mm's alike) said "power cap", with the clock moving between 1305 and
# 1965 MHz (assets/results/timing-integrity/), so a second measurement would be held down the same way.
THROTTLING = 0x8 | 0x20 | 0x40 | 0x80
POWER_CAP = 0x4


@dataclass
class ClockState:
    sm_mhz: int | None = None
    max_sm_mhz: int | None = None
    reasons: int = 0
    note: str | None = None          # why nothing could be read

    @property
    def readable(self) -> bool:
        return self.note is None

    @property
    def throttled(self) -> bool:
        return bool(self.reasons & THROTTLING)

    @property
    def power_capped(self) -> bool:
        return bool(self.reasons & POWER_CAP)

    def reason_names(self) -> list[str]:
        return [name for bit, name in REASONS.items() if self.reasons & bit and bit != 0x1]

    def describe(self) -> str:
        if not self.readable:
            return f"clock not read ({self.note})"
        held = ", ".join(self.reason_names()) or "nothing"
        top = f" of {self.max_sm_mhz}" if self.max_sm_mhz else ""
        return f"SM {self.sm_mhz}{top} MHz, held by {held}"

    def as_dict(self) -> dict:
        return {"sm_mhz": self.sm_mhz, "max_sm_mhz": self.max_sm_mhz, "reasons": self.reason_names(),
                "throttled": self.throttled, "note": self.note}


@dataclass
class ClockSpan:
    """The clock around a measurement: read before it, after it, and between its batches."""
    readings: list[ClockState] = field(default_factory=list)

    def add(self, state: ClockState) -> None:
        self.readings.append(state)

    @property
    def readable(self) -> list[ClockState]:
        return [r for r in self.readings if r.readable]

    @property
    def throttled(self) -> bool:
        return any(r.throttled for r in self.readings)

    @property
    def power_capped(self) -> bool:
        return any(r.power_capped for r in self.readings)

    def mean_mhz(self) -> float | None:
        values = [r.sm_mhz for r in self.readable if r.sm_mhz]
        return sum(values) / len(values) if values else None

    def describe(self) -> str:
        if not self.readings:
            return "clock not read"
        if not self.readable:
            return self.readings[0].describe()
        mhz = [r.sm_mhz for r in self.readable if r.sm_mhz]
        held = sorted({n for r in self.readable for n in r.reason_names()})
        top = next((r.max_sm_mhz for r in self.readable if r.max_sm_mhz), None)
        span = f"{min(mhz)}-{max(mhz)}" if mhz and min(mhz) != max(mhz) else (f"{mhz[0]}" if mhz else "?")
        return (f"SM clock {span}{f' of {top}' if top else ''} MHz over {len(self.readable)} readings; "
                f"held by {', '.join(held) if held else 'nothing'}")

    def as_dict(self) -> dict:
        mhz = [r.sm_mhz for r in self.readable if r.sm_mhz]
        return {"readings": len(self.readings), "throttled": self.throttled, "power_capped": self.power_capped,
                "mean_sm_mhz": self.mean_mhz(), "min_sm_mhz": min(mhz, default=None),
                "max_sm_mhz": max(mhz, default=None), "note": None if self.readable else self.readings[0].note}


_HANDLE = None
_WHY: str | None = None


def handle():
    """NVML's handle of this process's GPU (CUDA's device 0, found by its UUID), or None: `why_not()` says why."""
    global _HANDLE, _WHY
    if _HANDLE is not None or _WHY is not None:
        return _HANDLE
    try:
        import pynvml
        import torch

        if not torch.cuda.is_available():
            _WHY = "no GPU"
            return None
        pynvml.nvmlInit()
        uuid = str(torch.cuda.get_device_properties(0).uuid)
        _HANDLE = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    except Exception as exc:  # noqa: BLE001 - no driver, no binding, a sandbox: said once, in the state
        _WHY = f"NVML: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return _HANDLE


def why_not() -> str:
    """Why NVML has no handle of this process's GPU."""
    return _WHY or "NVML not available"


def read() -> ClockState:
    """The SM clock and its clock-event reasons now."""
    device = handle()
    if device is None:
        return ClockState(note=why_not())
    import pynvml

    try:
        sm = pynvml.nvmlDeviceGetClockInfo(device, pynvml.NVML_CLOCK_SM)
        top = pynvml.nvmlDeviceGetMaxClockInfo(device, pynvml.NVML_CLOCK_SM)
        getter = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return ClockState(sm_mhz=int(sm), max_sm_mhz=int(top), reasons=int(getter(device)))
    except Exception as exc:  # noqa: BLE001
        return ClockState(note=f"NVML: {type(exc).__name__}: {exc}")
