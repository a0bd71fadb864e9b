"""Chapter 9: low precision.

Exercises
- 9.0  napkin math: the spacing of e4m3 and e5m2 values, what one scale per tensor flushes to zero, and the
       bytes a block-scaled FP8 GEMM moves (CPU-checkable)
- 9a   `quantize(x, codes, scales)`: x (M, K) bf16 or fp16 to e4m3 codes (M, K) and one fp32 scale per group of
       128 columns of a row, written as scales (ceil(K / 128), M), in one pass. Every code and every scale must
       equal `quantize_reference`'s bit for bit. Speed against torch eager's composite (bars.toml "9a") and
       against a copy of the same bytes ("9a-copy"), in one speed cell
- 9b   `fp8_gemm(a, a_scale, b, b_scale, out)`: out (M, N) bf16 = (a * a_scale) @ (b * b_scale)^T with a (M, K)
       e4m3 and 1 x 128 scales (as 9a writes them), b (N, K) e4m3 and one scale per 128 x 128 block, fp32
       accumulation. Correct against a float64 product of the dequantized inputs within a bound derived from
       the formats; its multiply-adds must run on FP8 tensor cores (counted, `check_fp8_tensor_cores`); speed
       against `torch._scaled_mm` with the same block scales (bars.toml "9b"; fp16 `torch.mm` reported)
- 9.2  the accumulator experiment: the error of an FP8 product against K, accumulated in the tensor cores
       alone and promoted to fp32 every 128 (`max_num_imprecise_acc`), measured here; the learner's
       `read_curve` is graded on the curve this machine produces
- 9.P  diagnose: two profiles of 9b's rungs, recorded on an H200 (CPU-checkable; `DIAGNOSE`)
- 9c   `mx_gemm(a, a_scale, b, b_scale, out)`: MXFP8 through `tl.dot_scaled` (e4m3, one e8m0 scale per 32).
       Correctness graded wherever it runs (the stretch's point); speed against bf16 torch.mm ("9c-stretch")
       held to its bar only where the tensor cores apply block scales themselves (sm_100 and later: the bar's
       by_arch entry), reported elsewhere with the reason it is out of reach

The e4m3 type does not compile for GPUs below compute capability 8.9 ("type fp8e4nv not supported in this
architecture"). There, and without a GPU, the chapter's Triton kernels run in Triton's interpreter on CPU
tensors (grader.harness.session, grader.harness.without_gpu), with the interpreter's fp8 casts made exact
and its `tl.dot` counted by operand type (grader.cuda.interpreter): correctness and the FP8 requirement are
judged in full at small sizes, and the speed cells say why they are not graded.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache, partial
from typing import Callable

import torch

from ..cuda import archs
from ..cuda.crosscompile import pipeline_buffers
from ..cuda.gpu import arch_here, gpu_info, gpu_or_reason, has_gpu
from ..errors import CheckFailed, NoGPUError, NotImplementedYet
from ..harness import answers, plots
from ..harness.answers import call_learner, require_close
from ..harness.exercise import (Exercise, Requirement, SmallSizes, SpeedResult, as_learner, check_correctness,
                                check_speed, counted_launch, no_gpu_speed, not_written_yet, ungraded_timing_skipped)
from ..harness.feasibility import Gradability, gradability, not_gradable_here, settle_unmeasured
from ..harness.outputs import Packed, Part
from ..harness.quiet import captured_stderr
from ..calls.rules import unchecked
from ..profiles.diagnose import Case

GROUP = 128                 # 1 x 128 groups of activations (9a), 128 x 128 blocks of weights (9b)
E4M3_MAX = 448.0            # the largest finite e4m3fn value: 1.75 x 2^8
# A group whose largest magnitude is below this is scaled as if it were this: the scale of an all-zero group
# would be 0, and 0 / 0 is NaN. DeepSeek's DeepGEMM clamps its activations' amax at the same 1e-4.
AMAX_FLOOR = 1e-4
FP8 = torch.float8_e4m3fn


def groups(k: int) -> int:
    return -(-k // GROUP)


def fp8_here() -> str:
    """Where this chapter's kernels run: "cuda" on a GPU with FP8 (compute capability 8.9 and later), else
    "cpu", in Triton's interpreter (grader.harness.without_gpu.INTERPRETED_BELOW). Speed needs "cuda"."""
    info = gpu_info()
    return "cuda" if info is not None and tuple(info.capability) >= (8, 9) else "cpu"


# ================================================================== 9.0: napkin math

FORMATS = {  # name: (explicit mantissa bits, exponent of the smallest normal, largest finite value)
    "e4m3": (3, -6, 448.0),
    "e5m2": (2, -14, 57344.0),
}


def step_reference(x: float, fmt: str) -> float:
    """The distance between consecutive values of `fmt` around |x| (0 < |x| <= the format's largest):
    2^(e - mantissa bits) where 2^e <= |x| < 2^(e+1), and below the smallest normal number the subnormals'
    fixed step 2^(min exponent - mantissa bits)."""
    mantissa, min_exp, _ = FORMATS[fmt]
    exponent = math.frexp(abs(x))[1] - 1 if x else min_exp
    return 2.0 ** (max(exponent, min_exp) - mantissa)


def flushed_below_reference(amax: float) -> float:
    """With one scale for a whole tensor, scale = amax / 448: the magnitude at or below which a value becomes
    e4m3 zero. Half the smallest subnormal (2^-9 / 2) times the scale; an exact tie rounds to the even code, 0."""
    return 2.0 ** -10 * amax / E4M3_MAX


def gemm_bytes_reference(m: int, n: int, k: int) -> int:
    """The fewest bytes a block-scaled FP8 GEMM moves: A and B once (1 byte an element), the bf16 output once,
    and the fp32 scales: one per row per 128 columns of A, one per 128 x 128 block of B."""
    return m * k + n * k + 2 * m * n + 4 * (m * groups(k) + groups(n) * groups(k))


def check_napkin_math(fp8_step, flushed_below, fp8_gemm_bytes) -> None:
    """Exercise 9.0: the spacing of fp8 values, the flush threshold of one scale per tensor, the GEMM's bytes."""
    names = "`fp8_step`, `flushed_below` and `fp8_gemm_bytes`"
    for x, fmt, hint in ((1.0, "e4m3", "3 mantissa bits: 8 steps between 1 and 2"),
                         (448.0, "e4m3", "448 = 1.75 x 2^8"), (300.0, "e4m3", "256 <= 300 < 512"),
                         (0.01, "e4m3", "below 2^-6 the subnormals keep a fixed step"),
                         (2.0 ** -6, "e4m3", "2^-6 is the smallest normal e4m3 number"),
                         (3.0, "e5m2", "2 mantissa bits"), (40000.0, "e5m2", "2^15 <= 40000 < 2^16"),
                         (1e-5, "e5m2", "below 2^-14 the e5m2 subnormals keep a fixed step")):
        require_close(call_learner(fp8_step, x, fmt, exercise="9.0", names=names), step_reference(x, fmt),
                      f"fp8_step({x!r}, {fmt!r}) (hint: {hint})")
    for amax in (448.0, 1.0, 1000.0, 3.5e-3):
        require_close(call_learner(flushed_below, amax, exercise="9.0", names=names), flushed_below_reference(amax),
                      f"flushed_below({amax!r}) (hint: the scale is amax / 448; the smallest e4m3 subnormal is "
                      "2^-9, and a value becomes 0 when it is at most half of it after scaling)")
    for m, n, k in ((4096, 7168, 7168), (1, 128, 128), (100, 300, 1000), (8192, 8192, 256)):
        require_close(call_learner(fp8_gemm_bytes, m, n, k, exercise="9.0", names=names),
                      gemm_bytes_reference(m, n, k),
                      f"fp8_gemm_bytes({m}, {n}, {k}) (hint: A and B at 1 byte an element, the output in bf16, and "
                      "4 bytes a scale: ceil(K/128) per row of A, ceil(N/128) x ceil(K/128) for B)")
    print("✓ 9.0 napkin math: fp8 spacing, the flush threshold and the GEMM's bytes are right")


# ================================================================== 9a: the quantize kernel

QuantSize = tuple[int, int]    # (M, K): x is M x K

# 8,192 tokens of a model 7,168 wide (DeepSeek-V3's hidden size): 112 MiB of bf16, beyond any L2.
QUANT_SPEED_SIZE: QuantSize = (8192, 7168)
QUANT_VISIBLE: tuple[QuantSize, ...] = ((64, 1024), (5, 1000), (1, 7168), (300, 384))
QUANT_HIDDEN: tuple[QuantSize, ...] = ((1, 1), (3, 129), (2, 50000), (4096, 200), (17, 7168))
QUANT_CPU: tuple[QuantSize, ...] = ((1, 300), (4, 256), (3, 130))
QUANT_CPU_HIDDEN: tuple[QuantSize, ...] = ((1, 1), (2, 129), (5, 384))
# Inputs up to this many elements hold the edge groups (`_edge_groups`); timing sizes hold plain data only.
EDGE_LIMIT = 1 << 22


def quantize_reference(x: torch.Tensor):
    """(codes, scales, scaled): what exercise 9a must write, bit for bit, and x / scale (for messages).

    Per row and group of 128 columns (the last group of a row may be shorter): amax = the largest |x| of the
    group, NaN if the group holds one; scale = max(amax, AMAX_FLOOR) / 448 in fp32, correctly rounded; each
    code = e4m3(clamp(x / scale, -448, 448)), the division correctly rounded, the cast to nearest with ties to
    even. A group holding inf or NaN gets a scale that is not finite (inf, or NaN): every code of it dequantizes
    to inf or NaN whatever it is, so its codes are not compared. Scales are returned (groups, M): the layout 9b
    reads.

    Both divisions are done in float64 and rounded once to fp32: a quotient of fp32 numbers computed with 53 bits
    and rounded to 24 is the correctly rounded fp32 quotient (53 >= 2 * 24 + 2), on any device. torch's own fp32
    division is not always that: on a GPU, a tensor divided by a Python number is multiplied by the number's
    reciprocal (ATen's div_true_kernel_cuda says it "may lose one bit"), and on an H200 half the scales of a
    group of random bf16 rows came out one unit in the last place off that way
    (assets/results/calibration/ch09-h200)."""
    xf = x.to(torch.float64)                             # bf16, fp16 and fp32 values are exact in float64
    m, k = xf.shape
    g = groups(k)
    padded = torch.nn.functional.pad(xf, (0, g * GROUP - k)) if k % GROUP else xf
    blocks = padded.view(m, g, GROUP)
    amax = blocks.abs().amax(dim=-1)                     # NaN propagates (torch's max reductions do)
    floor = torch.tensor(AMAX_FLOOR, dtype=torch.float32).item()   # the floor as fp32 holds it, as a kernel's is
    scale = (amax.clamp_min(floor) / E4M3_MAX).to(torch.float32)   # clamp keeps NaN: a NaN group keeps a NaN scale
    scaled = (blocks / scale.double()[..., None]).to(torch.float32).reshape(m, g * GROUP)[:, :k]
    # Clamped before the cast, so that the result does not depend on torch's own overflow rule: torch 2.11's
    # cast made values past 448 NaN, 2.12's saturates them (pytorch/pytorch pull request 178817).
    codes = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    return codes, scale.t().contiguous(), scaled


def eager_quantize(x: torch.Tensor, out=None):
    """What a PyTorch user writes, in fp32: upcast, group amax, divide, clamp, cast, and the scales transposed:
    torch eager runs each as kernels of its own. The baseline 9a is timed against; the reference it is checked
    against divides exactly (quantize_reference), which torch's division by a number on a GPU need not."""
    xf = x.to(torch.float32)
    m, k = xf.shape
    g = groups(k)
    padded = torch.nn.functional.pad(xf, (0, g * GROUP - k)) if k % GROUP else xf
    blocks = padded.view(m, g, GROUP)
    scale = blocks.abs().amax(dim=-1).clamp_min(AMAX_FLOOR) / E4M3_MAX
    codes = (blocks / scale[..., None]).reshape(m, g * GROUP)[:, :k].clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    return codes, scale.t().contiguous()


def _quant_parts(size: QuantSize) -> tuple:
    return (Part("codes", FP8, lambda s: tuple(s)), Part("scales", torch.float32, lambda s: (groups(s[1]), s[0])))


def _ties_group(length: int, gen: torch.Generator, device: str) -> torch.Tensor:
    """A group whose scale is an exact power of two and whose other values divide by it to exact midpoints
    between two e4m3 values: only round-half-to-even gives the reference's codes."""
    exponent = int(torch.randint(-10, 6, (1,), generator=gen, device=device))
    codes = torch.arange(1, 126, dtype=torch.uint8, device=device).view(FP8).to(torch.float32)
    midpoints = (codes[:-1] + codes[1:]) / 2
    picks = torch.randint(0, midpoints.numel(), (length,), generator=gen, device=device)
    signs = torch.randint(0, 2, (length,), generator=gen, device=device) * 2 - 1
    group = midpoints[picks] * signs
    group[int(torch.randint(0, length, (1,), generator=gen, device=device))] = E4M3_MAX * signs[0]
    return group * 2.0 ** exponent


def _edge_groups(x: torch.Tensor, gen: torch.Generator, device: str) -> None:
    """Writes, into distinct groups chosen at random, in this order as far as there are groups: one of exact
    ties, one of zeros, one holding a NaN, one holding +inf or -inf."""
    m, k = x.shape
    g = groups(k)
    order = torch.randperm(m * g, generator=gen, device=device).tolist()
    for kind, index in zip(("ties", "zeros", "nan", "inf"), order):
        row, group = divmod(index, g)
        lo, hi = group * GROUP, min(k, (group + 1) * GROUP)
        if kind == "ties":
            x[row, lo:hi] = _ties_group(hi - lo, gen, device).to(x.dtype)
        elif kind == "zeros":
            x[row, lo:hi] = 0
        else:
            where = lo + int(torch.randint(0, hi - lo, (1,), generator=gen, device=device))
            sign = 1.0 if int(torch.randint(0, 2, (1,), generator=gen, device=device)) else -1.0
            x[row, where] = float("nan") if kind == "nan" else sign * float("inf")


def _quantize_inputs(size: QuantSize, gen: torch.Generator, device: str, dtype=torch.bfloat16):
    """Rows at magnitudes 10^U(-3, 2) and each group at 2^U(-4, 4) of its row: the groups' scales differ, and a
    scale set by one group would flush its neighbours' small values."""
    m, k = size
    rows = 10 ** (torch.rand(m, 1, generator=gen, device=device) * 5 - 3)
    per_group = 2 ** (torch.rand(m, groups(k), generator=gen, device=device) * 8 - 4)
    spread = per_group.repeat_interleave(GROUP, dim=1)[:, :k]
    x = (torch.randn(m, k, generator=gen, device=device) * rows * spread).to(dtype)
    if m * k <= EDGE_LIMIT:
        _edge_groups(x, gen, device)
    return (x,)


def _code_value(code: int) -> float:
    return float(torch.tensor([code], dtype=torch.uint8).view(FP8).float())


def _compare_quantized(views, expected, size, what: str) -> None:
    """Codes and scales bit for bit, group by group, with a message that says which and why it differs."""
    codes, scales = views
    want_codes, want_scales, scaled = expected
    want_scales = want_scales.to(scales.device)
    m, k = size
    finite = torch.isfinite(want_scales)                       # (groups, M)
    got_bits, want_bits = scales.view(torch.int32), want_scales.view(torch.int32)
    unwritten = got_bits == -1                                 # the poison's bits, all ones
    if bool(unwritten.any()):
        g, row = (int(v) for v in torch.nonzero(unwritten)[0])
        raise CheckFailed(f"{what}: {int(unwritten.sum()):,} of {unwritten.numel():,} scales were never written (the "
                          f"grader filled them with NaN before the call). First: row {row}, group {g}: scales[{g}, {row}]. "
                          "scales is (ceil(K/128), M): the scale of row m's group g goes to scales[g, m].",
                          reason="wrong-result")
    bad_scale = finite & (got_bits != want_bits)
    bad_nonfinite = ~finite & torch.isfinite(scales)
    if bool(bad_scale.any()):
        count = int(bad_scale.sum())
        g, row = (int(v) for v in torch.nonzero(bad_scale)[0])
        want, got = float(want_scales[g, row]), float(scales[g, row])
        raise CheckFailed(
            f"{what}: {count:,} of {int(finite.sum()):,} scales differ from the reference. First: row {row}, group {g} "
            f"(columns {g * GROUP} to {min(k, (g + 1) * GROUP) - 1}): expected {want!r} (= max(amax, {AMAX_FLOOR}) / "
            f"448 = {want * E4M3_MAX!r} / 448), got {got!r}"
            + (f", {got / want:.9f} of it" if want else "") + ". The scale is the group's largest |x| over 448, in fp32, "
            "correctly rounded: Triton's `/` on fp32 compiles to an approximate division (div.full.f32, up to 2 units "
            "in the last place off) on a GPU; tl.div_rn(a, b) divides exactly, as torch does.", reason="wrong-result")
    if bool(bad_nonfinite.any()):
        g, row = (int(v) for v in torch.nonzero(bad_nonfinite)[0])
        raise CheckFailed(
            f"{what}: wrong scale: row {row}, group {g} (columns {g * GROUP} to {min(k, (g + 1) * GROUP) - 1}) holds "
            f"{'NaN' if bool(torch.isnan(want_scales[g, row])) else 'an infinity'}, so its scale must not be finite "
            f"(inf or NaN), and yours is {float(scales[g, row])!r}. A finite scale turns the non-finite value into "
            "a number: the error disappears silently. tl.max, like the GPU's max instruction, ignores NaN: make a "
            "NaN count (tl.where(x != x, float('inf'), tl.abs(x)) before the max, for example).",
            reason="wrong-result")
    group_of = torch.arange(k, device=codes.device) // GROUP
    finite_elements = finite.t()[:, group_of]                   # (M, K)
    got = codes.view(torch.uint8)
    want = want_codes.to(codes.device).view(torch.uint8)
    # A zero's sign is not graded: -0 (0x80) and +0 (0x00) are the same value.
    differ = finite_elements & (_unsigned_zero(got) != _unsigned_zero(want))
    if bool(differ.any()):
        count = int(differ.sum())
        row, col = (int(v) for v in torch.nonzero(differ)[0])
        value = float(scaled[row, col])
        expect, have = int(want[row, col]), int(got[row, col])
        unwritten = have == 0xFF
        hint = ("it was never written (the grader filled the output with 0xFF bytes before the call)" if unwritten else
                _rounding_hint(value, _code_value(expect), _code_value(have)))
        raise CheckFailed(
            f"{what}: {count:,} of {int(finite_elements.sum()):,} codes differ from the reference. First: row {row}, "
            f"column {col}: x / scale = {value!r}, expected code 0x{expect:02x} ({_code_value(expect)!r}), got 0x{have:02x}"
            f" ({_code_value(have)!r}): {hint}.", reason="wrong-result")


def _unsigned_zero(bits: torch.Tensor) -> torch.Tensor:
    return torch.where(bits == 0x80, torch.zeros_like(bits), bits)


def _rounding_hint(value: float, want: float, got: float) -> str:
    if got != got:
        return "a NaN code where the value is finite"
    if abs(value) > E4M3_MAX:
        return "saturate: clamp to ±448 before the cast"
    low, high = sorted((want, got))
    if low < abs(value) < high or low < value < high:
        if abs(value - (want + got) / 2) == 0:
            return "an exact tie between two e4m3 values: round half to even (x.to(tl.float8e4nv) does)"
        return "x / scale lies between the two, nearer the expected: was x divided by exactly the scale you stored?"
    return ("the code is not the nearest e4m3 value of x / scale: check the group each column belongs to, and the "
            "division (tl.div_rn divides exactly; `/` approximately)")


QUANT_OUTPUTS = Packed(parts=_quant_parts(QUANT_SPEED_SIZE), compare=_compare_quantized)


def _quantize_exercise(dtype: torch.dtype) -> Exercise:
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    return Exercise(
        key="9a", title=f"fused 1x128 quantize ({name})", where="the code cell under 'Exercise 9a'",
        signature="quantize(x, codes, scales)", arg_names=("x",),
        make_inputs=lambda s, gen, dev: _quantize_inputs(s, gen, dev, dtype),
        make_output=lambda s, dev: QUANT_OUTPUTS.allocate(s, dev),
        reference=quantize_reference,
        baseline=eager_quantize,
        baseline_name="torch eager (upcast, amax, divide, clamp, cast)",
        dtype=torch.uint8,
        bytes_moved=lambda s: 2 * s[0] * s[1] + s[0] * s[1] + 4 * s[0] * groups(s[1]),
        visible_sizes=QUANT_VISIBLE,
        speed_size=lambda: QUANT_SPEED_SIZE,
        describe_size=lambda s: f"M={s[0]:,} K={s[1]:,} ({name})",
        cpu_sizes=QUANT_CPU,
        outputs=QUANT_OUTPUTS,
        speed_hint="one program per row block and group of 128 columns (or several groups a program): load the "
                   "group once in fp32, reduce tl.abs with tl.max, compute the scale with tl.div_rn, store the codes "
                   "cast to tl.float8e4nv and the scale. Two loads of x, or separate kernels, double its bytes.",
    )


QUANTIZE = _quantize_exercise(torch.bfloat16)
QUANTIZE_FP16 = _quantize_exercise(torch.float16)

# The same operation timed against a copy of as many bytes: its ratio is the kernel's share of what this GPU's
# memory can stream (reads and writes counted alike), the rate no kernel can pass.
_COPY_BUFFERS: dict[tuple, tuple] = {}


def same_bytes_copy(x: torch.Tensor, out=None):
    """A device-to-device copy (torch's `copy_`) that reads and writes, together, the bytes 9a moves."""
    m, k = x.shape
    half = (3 * m * k + 4 * m * groups(k)) // 2
    key = (str(x.device), half)
    if key not in _COPY_BUFFERS:
        _COPY_BUFFERS.clear()   # one pair at a time: the timing size's
        _COPY_BUFFERS[key] = (torch.empty(half, dtype=torch.uint8, device=x.device),
                              torch.empty(half, dtype=torch.uint8, device=x.device))
    src, dst = _COPY_BUFFERS[key]
    return dst.copy_(src)


QUANTIZE_COPY = replace(QUANTIZE, baseline=same_bytes_copy,
                        baseline_name="a copy of the same bytes (torch copy_)")


# ================================================================== 9b: the block-scaled FP8 GEMM

GemmSize = tuple[int, int, int]   # (M, N, K): a is M x K, b is N x K, out is M x N

# A DeepSeek-V3-shaped projection: 4,096 tokens, 7,168 in and out. K and N are multiples of 16, as
# torch._scaled_mm requires.
GEMM_SPEED_SIZE: GemmSize = (4096, 7168, 7168)
GEMM_VISIBLE: tuple[GemmSize, ...] = ((256, 256, 512), (128, 384, 1000), (1, 256, 384), (200, 136, 300))
GEMM_HIDDEN: tuple[GemmSize, ...] = ((1, 1, 1), (1, 4096, 7168), (515, 260, 1000), (2048, 512, 129), (130, 7168, 256))
GEMM_CPU: tuple[GemmSize, ...] = ((1, 40, 200), (33, 130, 300), (64, 64, 128))
GEMM_CPU_HIDDEN: tuple[GemmSize, ...] = ((1, 1, 1), (2, 129, 260), (65, 31, 129))
# Where the FP8 tensor-core work is counted: every product multiply-add must have run on fp8 operands.
FP8_COUNT_SIZE: GemmSize = (768, 768, 1024)
FP8_COUNT_SIZE_CPU: GemmSize = (64, 64, 256)

# The tolerance, from the formats (see _gemm_tolerance): the output's rounding to bf16, and the accumulator
# error of the FP8 tensor cores within one 128-block, as a share of the block's sum of |products|.
BF16_ROUNDING = 2.0 ** -8
BLOCK_ACCUMULATION = 2.0 ** -9


def _describe_gemm(size: GemmSize) -> str:
    m, n, k = size
    return f"M={m:,} N={n:,} K={k:,}"


def _gemm_inputs(size: GemmSize, gen: torch.Generator, device: str):
    """Codes drawn across e4m3's exponents (randn x 64, clamped to 448), and scales 2^U(-12, -4), a different one
    for every row and 128-group of a, every 128 x 128 block of b: a kernel that reads a scale from the wrong place,
    or none, is far off."""
    m, n, k = size
    a = (torch.randn(m, k, generator=gen, device=device) * 64).clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    b = (torch.randn(n, k, generator=gen, device=device) * 64).clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    a_scale = torch.exp2(torch.rand(groups(k), m, generator=gen, device=device) * -8 - 4)
    b_scale = torch.exp2(torch.rand(groups(n), groups(k), generator=gen, device=device) * -8 - 4)
    return a, a_scale, b, b_scale


def dequantize(a, a_scale, b, b_scale):
    """(A, B) as the values the codes and scales stand for, in the codes' dtype widened (float64 in checks)."""
    m, k = a.shape
    n = b.shape[0]
    a_full = a_scale.t().repeat_interleave(GROUP, dim=1)[:, :k]
    b_full = b_scale.repeat_interleave(GROUP, dim=0)[:n].repeat_interleave(GROUP, dim=1)[:, :k]
    return a.to(a_scale.dtype) * a_full, b.to(b_scale.dtype) * b_full


def product(a_deq, b_deq):
    return a_deq @ b_deq.t()


def accumulation_bound(a_deq, b_deq):
    """Per output element: BLOCK_ACCUMULATION x the sum over k of |a_k b_k| (dequantized)."""
    return BLOCK_ACCUMULATION * (a_deq.abs() @ b_deq.abs().t())


def gemm_reference(a, a_scale, b, b_scale):
    return product(*dequantize(a, a_scale, b, b_scale))


def gemm_error_bound(a, a_scale, b, b_scale):
    return accumulation_bound(*dequantize(a, a_scale, b, b_scale))


def _gemm_tolerance(size: GemmSize) -> tuple[float, float]:
    """(rtol, atol) against the float64 product of the dequantized inputs, with `gemm_error_bound` per element,
    and why.

    Each product of two e4m3 values has at most 8 significant bits, exact in any accumulator. Within one
    128-block the tensor cores sum them in an accumulator that keeps about 14 bits on Hopper (DeepSeek-V3's
    report, section 3.3.2): an error of a few units of 2^-13 of the block's sum of |products|, allowed as
    2^-9 of it (BLOCK_ACCUMULATION), 16 times one unit. The blocks' sums are scaled and added in fp32: at most
    K/128 roundings of 2^-24, nothing beside the rest. The output is rounded to bf16, 8 significant bits: half
    a step, 2^-9 of |out|, allowed as 2^-8 (twice). What it rejects: a scale read from the wrong row, group or
    block, or none, is off by factors of up to 2^8 (the scales span 2^-12 to 2^-4); codes read as the wrong
    format, or a K tail dropped, are off by whole products. tests/chapters/test_ch09.py holds it to both."""
    return BF16_ROUNDING, 1e-30


@lru_cache(maxsize=1)
def _scaled_mm_probe() -> str:
    """Why torch._scaled_mm's 1x128 / 128x128 recipe cannot run on this GPU, or "" when it runs (tried once at
    a small shape). PyTorch runs it through cuBLAS on sm_90 only, with cuBLAS 12.9 or later."""
    try:
        a, a_scale, b, b_scale = _gemm_inputs((128, 128, 256), torch.Generator(device="cuda"), "cuda")
        scaled_mm_baseline(a, a_scale, b, b_scale)
        torch.cuda.synchronize()
    except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (f"the baseline, torch._scaled_mm with 1x128 and 128x128 block scales (cuBLAS), does not run on this "
                f"GPU with torch {torch.__version__}: {first}")
    return ""


def scaled_mm_baseline(a, a_scale, b, b_scale, out=None):
    """The same recipe in cuBLAS: torch._scaled_mm with A's scales 1 x 128 (as (M, groups), stored group-major:
    a_scale transposed) and B's per 128 x 128 block (b given column-major as b.t(), its scales as b_scale.t())."""
    return torch._scaled_mm(a, b.t(), scale_a=a_scale.t(), scale_b=b_scale.t(), out_dtype=torch.bfloat16)


def same_shape_mm(dtype: torch.dtype):
    """`torch.mm` in `dtype` at the shape of a @ b^T, on inputs of that dtype made on the first call of a shape
    (a baseline or a comparison at the exercise's shape, not on its fp8 codes)."""
    made: dict = {}

    def run(a, a_scale, b, b_scale, out=None):
        key = (tuple(a.shape), tuple(b.shape), str(a.device))
        if key not in made:
            made.clear()
            made[key] = (torch.randn(a.shape, device=a.device, dtype=dtype),
                         torch.randn(b.shape[1], b.shape[0], device=a.device, dtype=dtype))
        x, w = made[key]
        return torch.mm(x, w)
    return run


def fp8_shared_memory_bytes(config, arch: archs.Arch) -> int:
    """The shared memory a 9b configuration asks for on `arch`: its pipeline's buffers (the rule read from the
    compiler: grader.cuda.crosscompile.pipeline_buffers), each a BLOCK_M x BLOCK_K tile of A and a BLOCK_K x
    BLOCK_N tile of B, one byte an element."""
    kw = config.kwargs
    return pipeline_buffers(config, arch) * (kw["BLOCK_M"] * kw["BLOCK_K"] + kw["BLOCK_K"] * kw["BLOCK_N"])


class FP8TensorCoreWork(Requirement):
    """Before any speed is measured: every multiply-add of the product ran on FP8 tensor cores
    (`check_fp8_tensor_cores`)."""
    when = "before-speed"

    def check(self, ex, fn, label: str) -> None:
        check_fp8_tensor_cores(fn, what=label, verbose=False)


GEMM = Exercise(
    key="9b", title="block-scaled FP8 GEMM", where="the code cell under 'Exercise 9b'",
    signature="fp8_gemm(a, a_scale, b, b_scale, out)", arg_names=("a", "a_scale", "b", "b_scale"),
    make_inputs=_gemm_inputs,
    make_output=lambda s, dev: torch.empty(s[0], s[1], device=dev, dtype=torch.bfloat16),
    reference=gemm_reference,
    baseline=scaled_mm_baseline,
    baseline_name="torch._scaled_mm (1x128, 128x128 scales)",
    dtype=torch.bfloat16,
    bytes_moved=lambda s: gemm_bytes_reference(*s),
    visible_sizes=GEMM_VISIBLE,
    speed_size=lambda: GEMM_SPEED_SIZE,
    describe_size=_describe_gemm,
    ceiling="fp8_tflops",
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    tolerance=_gemm_tolerance,
    error_bound=gemm_error_bound,
    others={"torch.mm fp16": lambda: same_shape_mm(torch.float16)},
    cpu_sizes=GEMM_CPU,
    requirements=(FP8TensorCoreWork(),),
    speed_hint="128 x 128 (or 128 x 256) output tiles in the grouped order, BLOCK_K = 128 so that one tl.dot covers "
               "one scale block: acc += tl.dot(a_tile, b_tile) * a_scale[:, None] * b_scale, the e4m3 tiles passed "
               "to tl.dot as loaded, 3 or 4 pipeline stages, 8 warps.",
)


# ================================================================== 9c (stretch): MXFP8 through tl.dot_scaled

MX_BLOCK = 32
MX_SPEED_SIZE: GemmSize = (8192, 8192, 8192)
MX_VISIBLE: tuple[GemmSize, ...] = ((256, 256, 512), (1, 128, 256), (200, 136, 320))
MX_CPU: tuple[GemmSize, ...] = ((1, 40, 64), (33, 70, 96), (64, 64, 128))


def _mx_inputs(size: GemmSize, gen: torch.Generator, device: str):
    """e4m3 codes, and e8m0 scales (a biased exponent in a byte: 2^(s - 127)) between 2^-8 and 2^7."""
    m, n, k = size
    a = (torch.randn(m, k, generator=gen, device=device) * 64).clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    b = (torch.randn(n, k, generator=gen, device=device) * 64).clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
    a_scale = torch.randint(119, 135, (m, k // MX_BLOCK), generator=gen, device=device).to(torch.uint8)
    b_scale = torch.randint(119, 135, (n, k // MX_BLOCK), generator=gen, device=device).to(torch.uint8)
    return a, a_scale, b, b_scale


def mx_dequantize(a, a_scale, b, b_scale):
    """(A, B) in float64: each code times 2^(its block's byte - 127)."""
    def one(codes, scales):
        return codes.double() * torch.exp2(scales.double() - 127).repeat_interleave(MX_BLOCK, dim=1)
    return one(a, a_scale), one(b, b_scale)


def mx_reference(a, a_scale, b, b_scale):
    return product(*mx_dequantize(a, a_scale, b, b_scale))


def mx_error_bound(a, a_scale, b, b_scale):
    return accumulation_bound(*mx_dequantize(a, a_scale, b, b_scale))


# bf16 torch.mm at the same shape: the GEMM a micro-scaled one replaces.
bf16_mm_baseline = same_shape_mm(torch.bfloat16)


MX_GEMM = Exercise(
    key="9c", title="MXFP8 GEMM (tl.dot_scaled)", where="the code cell under 'Stretch: micro-scaled formats'",
    signature="mx_gemm(a, a_scale, b, b_scale, out)", arg_names=("a", "a_scale", "b", "b_scale"),
    make_inputs=_mx_inputs,
    make_output=lambda s, dev: torch.empty(s[0], s[1], device=dev, dtype=torch.bfloat16),
    reference=mx_reference,
    baseline=bf16_mm_baseline,
    baseline_name="torch.mm bf16",
    dtype=torch.bfloat16,
    bytes_moved=lambda s: s[0] * s[2] + s[1] * s[2] + 2 * s[0] * s[1] + (s[0] + s[1]) * s[2] // MX_BLOCK,
    visible_sizes=MX_VISIBLE,
    speed_size=lambda: MX_SPEED_SIZE,
    describe_size=_describe_gemm,
    ceiling="fp8_tflops",
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    tolerance=_gemm_tolerance,
    error_bound=mx_error_bound,
    cpu_sizes=MX_CPU,
    speed_hint="tl.dot_scaled(a_tile, a_scales, 'e4m3', b_tile, b_scales, 'e4m3') on 128 x 128 x 128 tiles: on "
               "sm_100 the tensor cores apply the scales themselves.",
)

EXERCISES = (QUANTIZE, GEMM, MX_GEMM)
BAR_KEYS = {"9a": "9a", "9a-copy": "9a", "9b": "9b", "9c-stretch": "9c"}
# `ladder check --sanitize` runs memcheck only: Triton places shared memory and every barrier itself.
SANITIZER_TOOLS = ("memcheck",)
SANITIZE = (
    SmallSizes(QUANTIZE, "quantize", ((1, 1), (3, 129), (5, 1000))),
    SmallSizes(GEMM, "fp8_gemm", ((1, 1, 1), (33, 47, 129), (130, 260, 300))),
    SmallSizes(MX_GEMM, "mx_gemm", ((1, 40, 64), (130, 260, 320)), stretch=True),
)


# ------------------------------------------------------------------ where this machine runs the kernels

def _sizes(visible, cpu, hidden=(), cpu_hidden=()) -> list:
    return list(visible + hidden) if fp8_here() == "cuda" else list(cpu + cpu_hidden)


def _speed_not_here(key: str, ex: Exercise, fn) -> bool:
    """Before a speed cell times anything: True, after saying so (or raising by the policy), where nothing can be
    timed here: no GPU (NoGPUError, as every chapter), a GPU without FP8 (not gradable, nothing compiles), or a
    baseline that does not run here. The kernel's correctness at a small size comes first, so that a stub or a
    broken kernel says so rather than only why speed is not measured."""
    if fp8_here() != "cuda":
        check_correctness(ex, fn, ex.cpu_sizes[:1], trials=1, device="cpu", verbose=False)
        if not has_gpu():
            raise no_gpu_speed(ex)
        settle_unmeasured(gradability(key, arch_here()), ex.title)
        return True
    return False


# ------------------------------------------------------------------ what the notebook calls: 9a

def check_quantize(quantize, hidden: bool = False, trials: int = 2, dtype: torch.dtype = torch.bfloat16):
    """Exercise 9a, correctness: every code and scale bit for bit, on the visible sizes (with `hidden`, the hidden
    ones too), each with a group of ties, one of zeros, one holding NaN, one holding an infinity."""
    ex = QUANTIZE_FP16 if dtype == torch.float16 else QUANTIZE
    sizes = _sizes(QUANT_VISIBLE, QUANT_CPU, QUANT_HIDDEN if hidden else (), QUANT_CPU_HIDDEN if hidden else ())
    return check_correctness(ex, quantize, sizes, trials, device=fp8_here())


def check_quantize_speed(quantize) -> SpeedResult | None:
    """Exercise 9a, speed: against torch eager's composite (bar "9a"), then against a copy of the same bytes
    (bar "9a-copy"): both must clear their bars. Returns the first result."""
    fn = as_learner(quantize)
    if _speed_not_here("9a", QUANTIZE, fn):
        return None
    result = check_speed(QUANTIZE, fn, "9a")
    check_speed(QUANTIZE_COPY, fn, "9a-copy")
    return result


# ------------------------------------------------------------------ what the notebook calls: 9b

def check_fp8_gemm(fp8_gemm, hidden: bool = False, trials: int = 2):
    """Exercise 9b, correctness against float64 on the visible sizes (with `hidden`, the hidden ones too)."""
    sizes = _sizes(GEMM_VISIBLE, GEMM_CPU, GEMM_HIDDEN if hidden else (), GEMM_CPU_HIDDEN if hidden else ())
    return check_correctness(GEMM, fp8_gemm, sizes, trials, device=fp8_here())


def check_fp8_tensor_cores(fp8_gemm, *, what: str = "9b", verbose: bool = True) -> None:
    """Every multiply-add of the product on FP8 tensor cores: the launcher runs once with its kernels counting
    the multiply-adds of each tensor-core MMA and of those on fp8 operands (on a GPU, instrumented copies,
    grader.cuda.tccount; in Triton's interpreter, its tl.dot calls, grader.cuda.interpreter), its result checked
    against its own uncounted run."""
    fn = as_learner(fp8_gemm)
    device = fp8_here()
    size = FP8_COUNT_SIZE if device == "cuda" else FP8_COUNT_SIZE_CPU
    with captured_stderr():
        try:
            tally, ran = counted_launch(GEMM, fn, size, f"{what} FP8 tensor cores, {_describe_gemm(size)}, counted run",
                                        device=device)
        except NotImplementedYet:
            raise not_written_yet(GEMM) from None
    message = judge_fp8_work(tally, ran, size, what)
    if verbose and message:
        print(message)


def judge_fp8_work(tally, ran, size: GemmSize, what: str) -> str:
    """The verdict on a counted run at `size`: the line a pass prints, or CheckFailed (no-fp8-tensor-cores)."""
    m, n, k = size
    need = m * n * k
    fp8, total = tally.fp8_total, tally.total
    if fp8 >= need:
        return (f"✓ {what} FP8 tensor cores: at {_describe_gemm(size)} your kernels did {fp8:,} multiply-adds on fp8 "
                f"operands ({fp8 / need:.2f}x the product's {need:,}; tiles past the edges count too)")
    if tally.uncounted:
        why = "; ".join(f"`{name}`: {reason}" for name, reason in tally.uncounted.items())
        unchecked(f"{what} FP8 tensor cores", "counting the multiply-adds your tensor cores execute", why)
        return ""
    by_kernel = ", ".join(f"`{name}` {v:,} ({tally.fp8_macs.get(name, 0):,} on fp8)" for name, v in tally.macs.items())
    if total >= need:
        cause = (f"{total:,} multiply-adds ran on tensor cores, but only {fp8:,} of them on fp8 operands: the rest "
                 "multiplied 16-bit values. Converting the e4m3 tiles (`.to(tl.float16)`, `.to(tl.bfloat16)`) before "
                 "tl.dot runs the product on the fp16 or bf16 tensor cores, at half the FP8 rate, whatever the "
                 "inputs were. Pass the e4m3 tiles to tl.dot as they were loaded, and apply the scales to its fp32 "
                 "result.")
    else:
        cause = (f"the tensor cores did {total:,} multiply-adds ({fp8:,} on fp8 operands) of the {need:,} the product "
                 "needs: the rest ran elsewhere. Every product must go through tl.dot on the e4m3 tiles.")
    raise CheckFailed(f"{what} FP8 tensor cores, at {_describe_gemm(size)}: {cause} (By kernel: {by_kernel or 'none'}. "
                      "Counted by running your launcher once with every tensor-core MMA counted.)",
                      reason="no-fp8-tensor-cores")


def check_fp8_gemm_speed(fp8_gemm) -> SpeedResult | None:
    """Exercise 9b, speed: FP8 tensor-core work first (the exercise's requirement), then against
    torch._scaled_mm with the same block scales (bar "9b"); fp16 torch.mm is reported beside it."""
    fn = as_learner(fp8_gemm)
    if _speed_not_here("9b", GEMM, fn):
        return None
    cause = _scaled_mm_probe()
    if cause:
        arch = arch_here()
        settle_unmeasured(Gradability(gradability("9b", arch).bar, arch, cause=cause), GEMM.title)
        return None
    return check_speed(GEMM, fn, "9b")


# ------------------------------------------------------------------ what the notebook calls: 9c

def check_mx_gemm(mx_gemm, trials: int = 1):
    """Stretch 9c, correctness: MXFP8 against float64 (graded wherever it runs)."""
    return check_correctness(MX_GEMM, mx_gemm, _sizes(MX_VISIBLE, MX_CPU), trials, device=fp8_here())


def check_mx_gemm_speed(mx_gemm) -> SpeedResult | None:
    """Stretch 9c, speed against bf16 torch.mm (bar "9c-stretch"): graded (it must clear the bar) only on GPUs
    whose tensor cores apply block scales (the "block-scaled MMA" capability, sm_100 and later: the bar's by_arch
    entry); measured and reported elsewhere, with the reason it is out of reach there. The stretch's points are
    its correctness cell's: the speed cell carries none. Like every stretch cell (check_stretch), not attempted yet
    or no GPU is printed rather than raised, so that "Run All" carries on."""
    fn = as_learner(mx_gemm)
    try:
        if _speed_not_here("9c-stretch", MX_GEMM, fn):
            return None
    except NotImplementedError:
        print("Stretch goal not attempted yet: write mx_gemm and mx_gemm_kernel above to try it.")
        return None
    except NoGPUError as exc:
        print(str(exc))
        return None
    return check_speed(MX_GEMM, fn, "9c-stretch")


# ================================================================== 9.2: what the accumulator does

ACCUMULATOR_KS = (512, 1024, 2048, 4096, 8192, 16384)
ACCUMULATOR_TILE = 64
ACCUMULATOR_BLOCK_K = 128
ERROR_FLOOR = 2.0 ** -60   # an exact result is recorded as this, so that every error has a logarithm


@lru_cache(maxsize=1)
def _accumulate_kernel():
    """The experiment's kernel (the course's own, not graded): one 64 x 64 tile of a @ b^T on e4m3 inputs, K in
    steps of 128, accumulated with `tl.dot(a, b, acc)` either in the tensor cores alone (PROMOTE = 0: Triton's
    default on sm_90) or promoted to fp32 after every 128 (`max_num_imprecise_acc=128`)."""
    import triton
    import triton.language as tl

    from ..cuda.crosscompile import quiet_triton

    def ladder_fp8_accumulate(a_ptr, b_ptr, c_ptr, K, TILE: tl.constexpr, BLOCK_K: tl.constexpr,
                              PROMOTE: tl.constexpr):
        rows, cols, ks = tl.arange(0, TILE), tl.arange(0, TILE), tl.arange(0, BLOCK_K)
        acc = tl.zeros((TILE, TILE), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rows[:, None] * K + (k0 + ks)[None, :])
            b = tl.load(b_ptr + cols[None, :] * K + (k0 + ks)[:, None])
            if PROMOTE:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
            else:
                acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rows[:, None] * TILE + cols[None, :], acc)

    with quiet_triton():
        return triton.jit(ladder_fp8_accumulate)


def _accumulate_without_fp8(a, b, promote: bool):
    """What the experiment's kernel computes where it runs in Triton's interpreter: each 128-wide tl.dot in fp32
    (the interpreter widens fp8 and multiplies in fp32), added into an fp32 accumulator, whether promoted or not.
    Computed with torch, here, so that the experiment does not depend on how this process imported Triton."""
    acc = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float32)
    for k0 in range(0, a.shape[1], ACCUMULATOR_BLOCK_K):
        block = slice(k0, k0 + ACCUMULATOR_BLOCK_K)
        acc += a[:, block].float() @ b[:, block].float().t()
    return acc


def accumulator_curve(ks=ACCUMULATOR_KS, verbose: bool = True) -> dict:
    """The relative error (Frobenius norm of the error over that of the float64 product) of a 64 x 64 tile of
    a @ b^T against K, accumulated in the tensor cores alone and promoted every 128, on this machine: on a GPU
    with FP8, its tensor cores; otherwise Triton's interpreter, which accumulates in fp32 whatever it is asked.
    The inputs are |randn| in e4m3: all positive, so that every partial sum only grows, the accumulator's
    worst case. Returns {"where", "k", "plain", "promoted"}."""
    device = fp8_here()
    kernel = _accumulate_kernel() if device == "cuda" else None
    gen = torch.Generator(device=device).manual_seed(int(torch.randint(0, 2**31, (1,))))
    tile = ACCUMULATOR_TILE
    curve = {"where": _where(device), "k": list(ks), "plain": [], "promoted": []}
    with captured_stderr():
        for k in ks:
            a = torch.randn(tile, k, generator=gen, device=device).abs().to(FP8)
            b = torch.randn(tile, k, generator=gen, device=device).abs().to(FP8)
            want = a.double() @ b.double().t()
            for promote, name in ((0, "plain"), (1, "promoted")):
                if kernel is None:
                    c = _accumulate_without_fp8(a, b, bool(promote))
                else:
                    c = torch.empty(tile, tile, device=device, dtype=torch.float32)
                    kernel[(1,)](a, b, c, k, TILE=tile, BLOCK_K=ACCUMULATOR_BLOCK_K, PROMOTE=promote, num_warps=4)
                error = float(torch.linalg.norm(c.double() - want) / torch.linalg.norm(want))
                curve[name].append(max(error, ERROR_FLOOR))
    if verbose:
        print(f"Relative error of a 64 x 64 tile of an e4m3 product, {curve['where']}:")
        print(f"{'K':>7} {'in the tensor cores':>20} {'promoted every 128':>20}")
        for k, plain, promoted in zip(curve["k"], curve["plain"], curve["promoted"]):
            print(f"{k:>7,} {plain:>20.3e} {promoted:>20.3e}")
    return curve


def _where(device: str) -> str:
    info = gpu_info()
    if device == "cuda" and info is not None:
        return f"on {info.name} (its FP8 tensor cores)"
    why = "no GPU" if info is None else f"{info.name} has no FP8 tensor cores"
    return (f"as Triton's interpreter computes it ({why}): in fp32, promoted or not, which is not what any tensor "
            "core does")


def read_curve_reference(ks, plain, promoted) -> tuple[float, float]:
    """(slope, ratio): the least-squares slope of log2(error in the tensor cores alone) against log2(K), and that
    error over the promoted one at the largest K."""
    import numpy as np

    slope = float(np.polyfit(np.log2(np.asarray(ks, dtype=float)), np.log2(np.asarray(plain, dtype=float)), 1)[0])
    return slope, float(plain[-1] / promoted[-1])


def check_curve_reading(read_curve) -> None:
    """Exercise 9.2: `read_curve(ks, plain, promoted)` returns (slope, ratio) of the curve measured here now,
    fresh inputs, on this GPU's tensor cores (or in the interpreter, said so)."""
    curve = accumulator_curve(verbose=False)
    args = (list(curve["k"]), list(curve["plain"]), list(curve["promoted"]))
    got = call_learner(read_curve, *args, exercise="9.2", names="`read_curve`")
    want = read_curve_reference(*args)
    where = f"9.2: read_curve on the curve measured {curve['where']} returned {got!r}, expected {want!r}"
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(where + ". It should return a tuple (slope, ratio).")
    try:
        slope, ratio = float(got[0]), float(got[1])
    except (TypeError, ValueError):
        raise CheckFailed(where + ". Both should be numbers.") from None
    if not math.isclose(slope, want[0], rel_tol=1e-6, abs_tol=1e-9):
        raise CheckFailed(where + ". Hint: the slope of a straight line fitted to log2(error) against log2(K) "
                                  "(numpy.polyfit(x, y, 1)[0]): 1 means the error doubles when K doubles.")
    if not math.isclose(ratio, want[1], rel_tol=1e-9):
        raise CheckFailed(where + ". Hint: the error in the tensor cores alone over the promoted one, at the largest K.")
    print(f"✓ 9.2 the accumulator, {curve['where']}: slope {want[0]:.2f}, {want[1]:,.1f}x the promoted error at "
          f"K = {curve['k'][-1]:,}")


def plot_curve(curve: dict):
    """The two errors against K, on log-log axes."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(curve["k"], curve["plain"], marker="o", label="in the tensor cores alone")
    ax.plot(curve["k"], curve["promoted"], marker="o", label="promoted to fp32 every 128")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K")
    ax.set_ylabel("relative error (Frobenius)")
    ax.set_title(curve["where"], fontsize=9)
    ax.legend()
    fig.tight_layout()
    return fig


# ================================================================== plots and worked versions

def flush_demo(rows: int = 64, cols: int = 4096, outlier: float = 2000.0, small: float = 0.1) -> dict:
    """Activations N(0, 1) with one outlier channel at `outlier`: of the values below `small` in magnitude, the
    share that quantize to 0 and the median relative error of the rest, with one scale for the whole tensor and
    with one per 1 x 128 group (the chapter's reference)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, cols, generator=gen)
    x[:, 7] = outlier
    out = {}
    for name, scale in (("one scale for the tensor", x.abs().max() / E4M3_MAX), ("one scale per 1 x 128 group", None)):
        if scale is None:
            codes, scales, _ = quantize_reference(x)
            back = codes.float() * scales.t().repeat_interleave(GROUP, dim=1)[:, :cols]
        else:
            back = (x / scale).clamp(-E4M3_MAX, E4M3_MAX).to(FP8).float() * scale
        chosen = (x.abs() < small) & (x != 0)
        zeroed = float(((back == 0) & chosen).sum() / chosen.sum())
        error = float(((back - x).abs() / x.abs())[chosen & (back != 0)].median())
        out[name] = (zeroed, error)
        print(f"{name:<28} of the values below {small:g}: {100 * zeroed:4.1f}% became 0, the others are off by "
              f"{100 * error:.1f}% (median)")
    return out


def plot_results(*results: SpeedResult | None):
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 9 on {gpu}")


def measure_version(fn, label: str, ex: Exercise = GEMM, bar_key: str | None = None) -> SpeedResult | None:
    """Time a version that is not graded (a worked rung) against the exercise's baseline; printed, never raised,
    and None where nothing can be timed here."""
    from ..harness.exercise import measure_version as measure

    if fp8_here() != "cuda":
        print(f"{label}: not measured: {'no GPU' if not has_gpu() else 'this GPU has no FP8 tensor cores'}.")
        return None
    if ex is GEMM and _scaled_mm_probe():
        print(f"{label}: not measured: {_scaled_mm_probe()}")
        return None
    return measure(ex, fn, label, bar_key)


# ================================================================== doctor

def doctor_notes(arch: archs.Arch, ns: dict) -> list[str]:
    """What `ladder doctor` says of this chapter on `arch`."""
    if arch.capability < (8, 9):
        return ["9a, 9b, 9c: Triton does not compile e4m3 for this GPU; the chapter's kernels run in Triton's "
                "interpreter on the CPU (correctness graded at small sizes), and its speed cells are not gradable"]
    if arch.capability != (9, 0):
        return ["9b: torch._scaled_mm's 1x128 / 128x128 recipe runs on sm_90 only (PyTorch, through cuBLAS 12.9 or "
                "later): where it does not run, the speed cell says so and is scored as not gradable"]
    return []


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of 9b's rungs (assets/profiles/H200/9b, Nsight Compute on an H200): the rung that scales the
# accumulator after every 32 of K, and the solution, which does it once per 128-block. tests/profiles/test_diagnose.py
# checks the answer key against the recorded numbers, and the `why` against them too.
DIAGNOSE = Case(
    key="9.P", exercise="9b", rung="every_step", beside="solution", binding="accumulator-promotion",
    next_rung="BLOCK_K = 128: one tl.dot per scale block, its fp32 result scaled and added once",
    choices=("BLOCK_K = 128: one tl.dot per scale block, its fp32 result scaled and added once",
             "convert the tiles to fp16 before tl.dot", "one scale per tensor instead of per block",
             "smaller output tiles, for more programs"),
    why="The rung below does four times the solution's fp32 work (19.7 against 4.9 GFLOP): it scales and adds its "
        "partial sums after every 32 of K instead of every 128, and its tensor pipe is busy 15% of the time against "
        "34%, for 2.3 times as long. It moves more bytes through DRAM (its autotuner chose 64 x 128 tiles), but at 7% "
        "of DRAM's peak: memory waits either way, and no one stall leads.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)


# ================================================================== the worked demonstrations (not graded)

def show_casts() -> None:
    """What this torch's casts to e4m3fn and e5m2 do with values past their range, beside the clamped cast the
    chapter's reference uses; and Triton's cast on this machine (its GPU, or the interpreter)."""
    values = [448.0, 464.0, 470.0, 500.0, 1e6, float("inf"), float("nan")]
    x = torch.tensor(values)
    print(f"torch {torch.__version__}:")
    print(f"{'x':>10} {'.to(e4m3fn)':>12} {'clamp, .to(e4m3fn)':>19} {'.to(e5m2)':>10}")
    e4 = x.to(FP8).float()
    clamped = x.clamp(-E4M3_MAX, E4M3_MAX).to(FP8).float()
    e5 = x.to(torch.float8_e5m2).float()
    for v, a, c, b in zip(values, e4.tolist(), clamped.tolist(), e5.tolist()):
        print(f"{v:>10g} {a:>12g} {c:>19g} {b:>10g}")
    print("(ties: 464 lies halfway between 448 and 480, and 480 has no e4m3fn code: it rounds to the even 448.)")
