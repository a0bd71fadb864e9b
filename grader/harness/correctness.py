"""Correctness: fresh random inputs, poisoned outputs, pristine inputs, a float64 reference.

`compare` decides with `torch.testing.assert_close`; what it adds is the message a learner can act
on: the first wrong index with expected and actual values, how many elements are wrong, the largest
errors, and a hint when the pattern says what went wrong (never written, a missing tail).
"""

from __future__ import annotations

import secrets
import textwrap

import torch

from ..errors import CheckFailed

# (rtol, atol) against a float64 reference, by the dtype the kernel computes in.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype not in TOLERANCES:
        raise KeyError(f"no tolerance for {dtype}; known: {sorted(map(str, TOLERANCES))}")
    return TOLERANCES[dtype]


def fresh_generator(device: str | torch.device) -> tuple[torch.Generator, int]:
    """A generator seeded from the OS, never from a fixed number: every trial draws new inputs."""
    seed = secrets.randbits(62)
    return torch.Generator(device=device).manual_seed(seed), seed


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill an output with NaN (floats) or an unlikely sentinel (ints) so unwritten elements fail. A byte
    buffer gets bytes of all ones: NaN in every floating type its parts are viewed as (grader.harness.outputs)."""
    if t.is_floating_point():
        return t.fill_(float("nan"))
    if t.dtype == torch.uint8:
        return t.fill_(0xFF)
    return t.fill_(torch.iinfo(t.dtype).min)


def unwritten(t: torch.Tensor) -> torch.Tensor:
    """Where `t` still holds what `poison` wrote."""
    if t.is_floating_point():
        return torch.isnan(t)
    return t == (0xFF if t.dtype == torch.uint8 else torch.iinfo(t.dtype).min)


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(flat)
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return "[" + ", ".join(map(str, reversed(idx))) + "]"


def describe_mismatch(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float,
                      allowance: str = "") -> str:
    a = actual.reshape(-1)
    e = expected.reshape(-1)
    bad = ~torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=False)
    positions = torch.nonzero(bad).reshape(-1)
    n_bad, total = positions.numel(), a.numel()
    if n_bad == 0:
        return "all elements within tolerance"
    first = int(positions[0])
    shape = tuple(actual.shape)
    lines = [f"{n_bad:,} of {total:,} elements are wrong ({100 * n_bad / total:.3g}%)."]
    lines.append(f"First wrong element at index {_fmt_index(first, shape)}: expected {e[first].item():.7g}, "
                 f"got {a[first].item():.7g}.")
    for p in positions[1:4].tolist():
        lines.append(f"  also index {_fmt_index(p, shape)}: expected {e[p].item():.7g}, got {a[p].item():.7g}")
    finite = torch.isfinite(a) & torch.isfinite(e)
    diff = (a - e).abs()
    if (finite & bad).any():
        d = diff[finite & bad]
        rel = d / e[finite & bad].abs().clamp_min(atol)
        lines.append(f"Largest absolute error {d.max().item():.3g}, largest relative error {rel.max().item():.3g} "
                     f"(tolerance: rtol={rtol:g}, atol={atol:g}{allowance}).")
    n_nan = int(torch.isnan(a[bad]).sum())
    if n_nan:
        lines.append(f"{n_nan:,} wrong elements are NaN. Outputs are filled with NaN before every launch, "
                     "so these were most likely never written.")
    if n_bad > 1 and int(positions[-1]) == total - 1 and n_bad == total - first:
        lines.append(f"Every element from index {first:,} to the end is wrong: does your launch cover all "
                     f"{total:,} elements (grid size = ceil(n / threads per block))?")
    return "\n".join(lines)


def compare(actual: torch.Tensor, expected: torch.Tensor, *, rtol: float, atol: float, what: str,
            torch_error: torch.Tensor | None = None, bound: torch.Tensor | None = None) -> None:
    """Raise CheckFailed with a readable message unless actual matches the float64 reference.

    `torch_error`: how far torch's own result is from the reference, element by element. An element
    that is no further off than that plus the tolerance is right: an answer as accurate as torch's
    is never refused, whichever inputs were drawn. `bound`: an allowance per element derived from the
    formats (Exercise.error_bound), added the same way."""
    if tuple(actual.shape) != tuple(expected.shape):
        raise CheckFailed(f"{what}: output has shape {tuple(actual.shape)}, expected {tuple(expected.shape)}",
                          reason="wrong-result")
    # Compare where the data is: copying 2^27 elements to the host would cost more than the kernel.
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(device=a.device, dtype=torch.float64)
    allowance = ""
    if torch_error is not None or bound is not None:
        # assert_close takes one rtol and one atol for every element, so the per-element allowance is
        # applied first: an element within it counts as equal to the reference, and only the rest
        # (NaN included: a comparison with NaN is false) reach assert_close and the message.
        extra = torch.zeros_like(e)
        for part in (torch_error, bound):
            if part is not None:
                extra = extra + part.to(device=a.device, dtype=torch.float64)
        within = (a - e).abs() <= atol + rtol * e.abs() + extra
        a = torch.where(within, e, a)
        allowance = ", plus torch's own error at that element" if bound is None else \
            ", plus the bound the formats give that element" + (" and torch's own error" if torch_error is not None else "")
    try:
        torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=False)
    except AssertionError as exc:
        detail = describe_mismatch(a, e, rtol, atol, allowance)
        raise CheckFailed(f"{what}: wrong result.\n{detail}\n\ntorch.testing.assert_close says:\n"
                          + textwrap.indent(str(exc).strip(), "  "), reason="wrong-result") from None


def snapshot(tensors) -> list[torch.Tensor]:
    return [t.clone() for t in tensors]


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """A floating tensor's bits as integers, so that NaN equals itself (chapter 9's inputs hold NaN on purpose)."""
    return t.view(_BITS[t.element_size()]) if t.is_floating_point() and t.dim() else t


def require_unchanged(before: list[torch.Tensor], after, what: str, names) -> None:
    for name, b, a in zip(names, before, after):
        if not torch.equal(b, a) and not (b.shape == a.shape and b.dtype == a.dtype and torch.equal(_bits(b), _bits(a))):
            n = int((_bits(b) != _bits(a)).sum()) if b.shape == a.shape and b.dtype == a.dtype else b.numel()
            raise CheckFailed(f"{what}: your code changed its input `{name}` ({n:,} elements differ). "
                              "Kernels must only write to the output.", reason="input-modified")


# ------------------------------------------------------------------------------- guard bands

class Guarded:
    """An output tensor with canary bands on both sides, in one allocation.

    The learner gets `out`, a contiguous view into the middle of a larger buffer; the bands before and
    after it hold random values drawn from the OS seed. A kernel that writes past either end of `out`
    changes a band, which `check()` reports, even without compute-sanitizer. Bands are as wide as the
    output itself, up to 2^20 elements, and at least 2^16: wider than a block's overrun or a
    128 x 256 tile's spill.
    """

    MIN_PAD, MAX_PAD = 1 << 16, 1 << 20

    def __init__(self, template: torch.Tensor):
        n = template.numel()
        # A multiple of 256 elements, so `out` keeps the 256-byte alignment of a fresh allocation
        # (float4 and cp.async kernels rely on it).
        self.pad = -(-max(self.MIN_PAD, min(n, self.MAX_PAD)) // 256) * 256
        self.buffer = torch.empty(n + 2 * self.pad, dtype=template.dtype, device=template.device)
        self.out = self.buffer[self.pad:self.pad + n].view(template.shape)
        gen, _ = fresh_generator(template.device)
        if template.is_floating_point():
            canary = torch.randn(2 * self.pad, generator=gen, device=template.device, dtype=torch.float32) * 1e3
        else:
            info = torch.iinfo(template.dtype)
            canary = torch.randint(max(info.min, -2**31), min(info.max, 2**31 - 1), (2 * self.pad,), generator=gen,
                                   device=template.device, dtype=torch.int64)
        self.canary = canary.to(template.dtype)
        self.reset()

    def reset(self) -> None:
        self.buffer[:self.pad].copy_(self.canary[:self.pad])
        self.buffer[-self.pad:].copy_(self.canary[self.pad:])

    def check(self, what: str, name: str = "out") -> None:
        n = self.out.numel()
        before = self.buffer[:self.pad]
        after = self.buffer[-self.pad:]
        bad_before = torch.nonzero(before.view(-1) != self.canary[:self.pad]).reshape(-1)
        bad_after = torch.nonzero(after.view(-1) != self.canary[self.pad:]).reshape(-1)
        if not bad_before.numel() and not bad_after.numel():
            return
        lines = [f"{what}: your kernel wrote outside `{name}` ({n:,} elements); the grader surrounds every output "
                 f"with {self.pad:,} guard elements on each side and some changed."]
        if bad_after.numel():
            first, last = int(bad_after[0]), int(bad_after[-1])
            lines.append(f"{bad_after.numel():,} elements past the end changed, from {name}[{n + first:,}] to "
                         f"{name}[{n + last:,}] (flat indices; the last valid one is {n - 1:,}).")
        if bad_before.numel():
            first = int(bad_before[0])
            lines.append(f"{bad_before.numel():,} elements before the start changed, the farthest "
                         f"{self.pad - first:,} elements before {name}[0].")
        lines.append("Most often a missing or off-by-one bounds check (`if (i < n)`, a Triton store without "
                     "`mask=`). `ladder check --sanitize` finds the kernel line.")
        raise CheckFailed("\n".join(lines), reason="out-of-bounds")


def guarded(template: torch.Tensor) -> Guarded:
    """`Guarded(template)`: allocate an output like `template`, with guard bands (template is not kept)."""
    return Guarded(template)
