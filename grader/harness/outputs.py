"""Several outputs of different dtypes as one output of the harness: chapter 9's quantize kernel writes fp8
codes and fp32 scales.

Every check hands the learner's launcher one `out` the grader allocated, with guard bands around it and
poison in it (grader.harness.correctness), and reads it back after the call. `Packed` keeps that: `out` is
one byte buffer, each part starting at a multiple of 256 bytes (the alignment of a fresh allocation), and the
launcher receives a typed view of each part in its place (Exercise.split, grader.calls.seam), so the
guard bands surround all of them, and nothing is copied. The buffer is poisoned with bytes of all ones
(grader.harness.correctness.poison), which read as NaN in every floating type viewed through them (fp8
e4m3fn 0xFF, fp32 0xFFFFFFFF); an element is unwritten when its own bits are still all ones, judged part by
part, since a written fp32 scale may hold a byte of all ones among its four.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

ALIGN = 256


@dataclass(frozen=True)
class Part:
    name: str                                   # "codes": how messages and the learner's signature call it
    dtype: torch.dtype
    shape: Callable[[tuple], tuple[int, ...]]   # its shape, from the exercise's size


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass(frozen=True)
class Packed:
    parts: tuple[Part, ...]
    # Checks the views of one output against the reference's tuple (one tensor a part, any dtype): raises
    # CheckFailed, says which part and which element.
    compare: Callable[[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...], object, str], None]

    def layout(self, size) -> list[tuple[Part, int, tuple[int, ...]]]:
        """(part, byte offset, shape) of every part, in order."""
        out, offset = [], 0
        for part in self.parts:
            shape = tuple(int(d) for d in part.shape(size))
            out.append((part, offset, shape))
            offset += -(-_count(shape) * torch.empty(0, dtype=part.dtype).element_size() // ALIGN) * ALIGN
        return out

    def nbytes(self, size) -> int:
        part, offset, shape = self.layout(size)[-1]
        return offset + _count(shape) * torch.empty(0, dtype=part.dtype).element_size()

    def allocate(self, size, device: str) -> torch.Tensor:
        return torch.empty(self.nbytes(size), dtype=torch.uint8, device=device)

    def views(self, out: torch.Tensor, size) -> tuple[torch.Tensor, ...]:
        """Each part as a tensor of its dtype and shape, sharing `out`'s memory."""
        views = []
        for part, offset, shape in self.layout(size):
            width = torch.empty(0, dtype=part.dtype).element_size()
            views.append(out[offset:offset + _count(shape) * width].view(part.dtype).view(shape))
        return tuple(views)

    def unwritten(self, out: torch.Tensor, size) -> int:
        """Elements, over every part, whose bits are still the poison's (all ones)."""
        left = 0
        for view in self.views(out, size):
            bits = view.view(_BITS[view.element_size()])
            left += int((bits == -1).sum()) if bits.dtype != torch.uint8 else int((bits == 0xFF).sum())
        return left

    def numel(self, size) -> int:
        return sum(_count(shape) for _, _, shape in self.layout(size))


def _count(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count
