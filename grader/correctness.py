"""Correctness: fresh random inputs, poisoned outputs, pristine inputs, a float64 reference.

`compare` decides with `torch.testing.assert_close`; what it adds is the message a learner can act
on: the first wrong index with expected and actual values, how many elements are wrong, the largest
errors, and a hint when the pattern says what went wrong (never written, a missing tail).
"""

from __future__ import annotations

import secrets
import textwrap

import torch

from .errors import CheckFailed

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
    """Fill an output with NaN (floats) or an unlikely sentinel (ints) so unwritten elements fail."""
    if t.is_floating_point():
        return t.fill_(float("nan"))
    return t.fill_(torch.iinfo(t.dtype).min)


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(flat)
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return "[" + ", ".join(map(str, reversed(idx))) + "]"


def describe_mismatch(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> str:
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
                     f"(tolerance: rtol={rtol:g}, atol={atol:g}).")
    n_nan = int(torch.isnan(a[bad]).sum())
    if n_nan:
        lines.append(f"{n_nan:,} wrong elements are NaN. Outputs are filled with NaN before every launch, "
                     "so these were most likely never written.")
    if n_bad > 1 and int(positions[-1]) == total - 1 and n_bad == total - first:
        lines.append(f"Every element from index {first:,} to the end is wrong: does your launch cover all "
                     f"{total:,} elements (grid size = ceil(n / threads per block))?")
    return "\n".join(lines)


def compare(actual: torch.Tensor, expected: torch.Tensor, *, rtol: float, atol: float, what: str) -> None:
    """Raise CheckFailed with a readable message unless actual matches the float64 reference."""
    if tuple(actual.shape) != tuple(expected.shape):
        raise CheckFailed(f"{what}: output has shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    # Compare where the data is: copying 2^27 elements to the host would cost more than the kernel.
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(device=a.device, dtype=torch.float64)
    try:
        torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=False)
    except AssertionError as exc:
        detail = describe_mismatch(a, e, rtol, atol)
        raise CheckFailed(f"{what}: wrong result.\n{detail}\n\ntorch.testing.assert_close says:\n"
                          + textwrap.indent(str(exc).strip(), "  ")) from None


def snapshot(tensors) -> list[torch.Tensor]:
    return [t.clone() for t in tensors]


def require_unchanged(before: list[torch.Tensor], after, what: str, names) -> None:
    for name, b, a in zip(names, before, after):
        if not torch.equal(b, a):
            n = int((b != a).sum()) if b.shape == a.shape else b.numel()
            raise CheckFailed(f"{what}: your code changed its input `{name}` ({n:,} elements differ). "
                              "Kernels must only write to the output.")
