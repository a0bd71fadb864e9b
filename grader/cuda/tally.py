"""What counted launches did on the tensor cores: plain data, shared by grader.cuda.tccount (which
counts on a GPU), grader.cuda.interpreter (which counts `tl.dot` in Triton's interpreter) and
grader.isolation (which sends it from the worker and judges it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tally:
    """What the counted launches did: tensor-core multiply-adds by kernel name, and again, for those whose
    operands were both fp8 (e4m3 or e5m2: chapter 9's requirement), under `fp8_macs`; kernels whose launches
    could not be counted here, with the reason (they ran uninstrumented); and tensor-core opcodes that no
    counter could be attached to (they count nothing)."""
    macs: dict[str, int] = field(default_factory=dict)
    uncounted: dict[str, str] = field(default_factory=dict)
    unweighed: dict[str, list[str]] = field(default_factory=dict)
    fp8_macs: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, macs: int) -> None:
        self.macs[name] = self.macs.get(name, 0) + int(macs)

    def add_fp8(self, name: str, macs: int) -> None:
        self.fp8_macs[name] = self.fp8_macs.get(name, 0) + int(macs)

    @property
    def total(self) -> int:
        return sum(self.macs.values())

    @property
    def fp8_total(self) -> int:
        return sum(self.fp8_macs.values())
