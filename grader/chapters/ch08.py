"""Chapter 8: should you write this kernel?

Exercises
- 8a  `amdahl(share, speedup)` and `worth_writing(row, speedup)`: the three-condition test (a hot op,
      headroom above its ceiling, a stable shape) on rows of a profile, with Amdahl's prediction of the
      end-to-end gain (CPU-checkable; visible and hidden cases, one answer key: `decide`)
- 8b  `block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out)`: a pre-norm
      transformer block built only from the learner's kernels of chapters 5, 6 and 7. Graded on
      correctness against float64 and on speed against torch eager (bars.toml "8b"); torch.compile is
      reported, never graded
- 8.P diagnose: the block of the learner's kernels at B = 1, N = 256 and at B = 64, each an Nsight Compute profile
      joined to a device trace of calls back to back; the binding constraint of the first and the rung that
      relieves it (CPU-checkable; `DIAGNOSE`)

The block follows the fused-residual convention of inference engines: it takes the previous layer's
output `x` and the residual stream `residual`, and returns both for the next block, stacked in `out`:

    r1 = x + residual               n1 = rmsnorm(r1) * w_norm1       (chapter 7: add_rmsnorm)
    a  = attention(n1 @ w_qkv) @ w_out                               (chapter 5a matmul, chapter 6)
    r2 = a + r1                     n2 = rmsnorm(r2) * w_norm2       (chapter 7: add_rmsnorm)
    m  = gelu(n2 @ w_up + b_up) @ w_down                             (chapter 5b, then 5a)
    out[0] = m,  out[1] = r2

Both halves of `out` are written by the learner's kernels (the down projection's matmul and the
second add_rmsnorm's residual output), so the harness's no-op probe sees any other writer. Attention is
bidirectional (an encoder block, causal=False), with heads of HEAD_DIM = 64.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import torch

from ..cuda.gpu import gpu_or_reason
from ..errors import CheckFailed
from ..harness import answers, plots
from ..harness.answers import call_learner
from ..harness.attention import attention_flops, attention_reference
from ..harness.norms import RMS_EPS, rms_norm  # noqa: F401  (RMS_EPS: the block's notebook reads ch08.RMS_EPS)
from ..harness.exercise import (
    Exercise,
    SmallSizes,
    SpeedResult,
    as_learner,
    check_correctness,
    check_speed,
    ungraded_timing_skipped,
)
from ..harness.fusion import require_launches
from ..harness.kernel_time import KernelTime
from ..harness.quiet import captured_stderr
from ..profiles.diagnose import Case

RECORDED = Path(__file__).resolve().parents[2] / "assets" / "results" / "calibration" / "ch08-h100"
RECORDED_GPU = "NVIDIA H100 80GB HBM3"

# ================================================================== 8a: the decision

# The three conditions, as numbers. An op is hot when it takes at least MIN_SHARE of the block's time:
# below that, Amdahl caps the end-to-end gain of even an infinitely fast kernel at 1 / (1 - 0.1) = 1.11x.
# It has headroom when it reaches less than MAX_OF_CEILING of the ceiling it is bound by: above that, a
# kernel that matched the ceiling would make it at most 1 / 0.6 = 1.67x faster. The ceilings are the
# rates `ladder doctor` measured (copy bandwidth, torch.mm at 8192^3), the best library's rate on this
# GPU, not the chip's data-sheet peak: a library can pass them on other shapes, nothing passes the peak. Its shape is stable when the sizes it runs at are
# known ahead (a fixed hidden size, a bounded sequence length), so that a kernel tuned for them stays good.
MIN_SHARE = 0.10
MAX_OF_CEILING = 0.60

NOT_HOT, NO_HEADROOM, UNSTABLE, WRITE = "not hot", "no headroom", "shape not stable", "worth writing"
REASONS = (NOT_HOT, NO_HEADROOM, UNSTABLE, WRITE)


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    """One op of a profiled block, as a learner reads it off a profile and the GPU's ceilings."""
    op: str                 # "RMSNorm", "attention", ...
    share: float            # its fraction of the block's time, 0..1
    achieved: float         # its throughput: GB/s for a memory-bound op, TFLOP/s for a compute-bound one
    ceiling: float          # the ceiling it is bound by, in the same unit
    bound: str              # "memory" or "compute": which ceiling `ceiling` is
    stable_shape: bool      # do the sizes it runs at stay fixed from call to call?

    @property
    def of_ceiling(self) -> float:
        return self.achieved / self.ceiling

    def describe(self) -> str:
        unit = "GB/s" if self.bound == "memory" else "TFLOP/s"
        return (f"{self.op}: {100 * self.share:.0f}% of the block, {self.achieved:,.0f} of {self.ceiling:,.0f} {unit} "
                f"({100 * self.of_ceiling:.0f}% of its {self.bound} ceiling), shape "
                f"{'stable' if self.stable_shape else 'varies'}")


def amdahl_reference(share: float, speedup: float) -> float:
    """End-to-end speedup when a part taking `share` of the time runs `speedup` times faster."""
    return 1.0 / ((1.0 - share) + share / speedup)


def decide(row: ProfileRow, speedup: float) -> tuple[bool, str, float]:
    """The answer key: (write it?, the reason, Amdahl's predicted end-to-end speedup).

    The conditions are tested in a fixed order, and the reason is the first that fails: not hot, then
    no headroom, then an unstable shape. The prediction holds for every row: the op sped up by
    `speedup`, but never past its ceiling (ceiling / achieved), through Amdahl's law."""
    reachable = min(speedup, row.ceiling / row.achieved)
    predicted = amdahl_reference(row.share, reachable)
    if row.share < MIN_SHARE:
        return False, NOT_HOT, predicted
    if row.of_ceiling >= MAX_OF_CEILING:
        return False, NO_HEADROOM, predicted
    if not row.stable_shape:
        return False, UNSTABLE, predicted
    return True, WRITE, predicted


def _row(op, share, achieved, ceiling, bound, stable=True) -> ProfileRow:
    return ProfileRow(op, share, achieved, ceiling, bound, stable)


# The visible cases: a block profiled on an H100 (ceilings 3,000 GB/s and 679 TFLOP/s, as measured by
# the course), with a kernel 3x faster proposed for each op. Each reason appears, and one hot op at 55%
# of its ceiling is capped by it.
VISIBLE_CASES: tuple[tuple[ProfileRow, float], ...] = (
    (_row("matmuls (4, cuBLAS)", 0.48, 560.0, 679.0, "compute"), 3.0),
    (_row("attention (SDPA)", 0.17, 330.0, 679.0, "compute"), 3.0),
    (_row("RMSNorm (eager, 8 kernels)", 0.14, 900.0, 3000.0, "memory"), 3.0),
    (_row("bias + GELU (eager)", 0.09, 2500.0, 3000.0, "memory"), 3.0),
    (_row("residual adds", 0.04, 2700.0, 3000.0, "memory"), 3.0),
    (_row("ragged batch gather", 0.15, 700.0, 3000.0, "memory", stable=False), 3.0),
    (_row("softmax, long rows", 0.22, 1650.0, 3000.0, "memory"), 10.0),
)
# The hidden cases, run when grading: the edges of every threshold (exactly 10% of the time, exactly
# 60% of the ceiling), a proposed speedup below 1, a whole block (share 1), and an unstable cold op.
HIDDEN_CASES: tuple[tuple[ProfileRow, float], ...] = (
    (_row("exactly hot", 0.10, 500.0, 3000.0, "memory"), 2.0),
    (_row("just cold", 0.0999, 500.0, 3000.0, "memory"), 4.0),
    (_row("exactly at 60%", 0.30, 1800.0, 3000.0, "memory"), 2.0),
    (_row("just under 60%", 0.30, 1799.0, 3000.0, "memory"), 2.0),
    (_row("slower kernel", 0.50, 100.0, 679.0, "compute"), 0.5),
    (_row("the whole block", 1.0, 200.0, 989.0, "compute"), 4.0),
    (_row("cold and unstable", 0.02, 100.0, 3000.0, "memory", stable=False), 5.0),
    (_row("hot, unstable, no headroom", 0.40, 2900.0, 3000.0, "memory", stable=False), 2.0),
    (_row("capped hard", 0.60, 300.0, 330.0, "compute"), 100.0),
)

AMDAHL_CASES = ((0.5, 2.0), (0.1, 1e9), (0.0, 5.0), (1.0, 4.0), (0.3, 1.0), (0.25, 0.5), (0.9, 10.0))


def check_amdahl(amdahl) -> None:
    """Exercise 8a, part 1: Amdahl's law on a few (share, speedup) pairs."""
    for share, speedup in AMDAHL_CASES:
        got = call_learner(amdahl, share, speedup, exercise="8a", names="`amdahl`")
        want = amdahl_reference(share, speedup)
        if not _close(got, want):
            raise CheckFailed(f"8a: amdahl(share={share}, speedup={speedup:g}) returned {got!r}, expected {want:.6g}. "
                              "Hint: the part that is not sped up still takes (1 - share) of the time; the part "
                              "that is takes share / speedup. The end-to-end speedup is 1 over their sum.")
    print(f"✓ 8a amdahl: right on {len(AMDAHL_CASES)} cases (an op at 10% of the time, made infinitely fast, "
          f"gives {amdahl_reference(0.1, 1e9):.3f}x)")


def _close(got, want: float) -> bool:
    try:
        return math.isclose(float(got), want, rel_tol=1e-6, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def check_worth_writing(worth_writing, hidden: bool = False) -> list[tuple[bool, str, float]]:
    """Exercise 8a, part 2: every row of the visible cases (and, with `hidden`, of the hidden ones).

    The first row whose decision, reason or prediction differs from the answer key fails the check,
    with the row, what was returned and what was expected."""
    cases = VISIBLE_CASES + (HIDDEN_CASES if hidden else ())
    answers = []
    for row, speedup in cases:
        got = call_learner(worth_writing, row, speedup, exercise="8a", names="`worth_writing`")
        want = decide(row, speedup)
        _compare_decision(row, speedup, got, want)
        answers.append(want)
    which = "visible and hidden" if hidden else "visible"
    print(f"✓ 8a worth_writing: every decision, reason and prediction right on {len(cases)} {which} rows")
    return answers


def _compare_decision(row: ProfileRow, speedup: float, got, want) -> None:
    where = f"8a: worth_writing(row, speedup={speedup:g}) for the row\n  {row.describe()}\n"
    expected = f"expected ({want[0]}, {want[1]!r}, {want[2]:.4f})"
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise CheckFailed(f"{where}returned {got!r}; it should return a tuple (write, reason, predicted): "
                          f"{expected}")
    write, reason, predicted = got
    if reason not in REASONS:
        raise CheckFailed(f"{where}gave the reason {reason!r}, which is none of {', '.join(map(repr, REASONS))}; "
                          f"{expected}")
    if bool(write) != want[0] or reason != want[1]:
        hint = {NOT_HOT: f"an op below {MIN_SHARE:.0%} of the time is not hot: test that first",
                NO_HEADROOM: f"at {MAX_OF_CEILING:.0%} of its ceiling or more an op has no headroom (tested second)",
                UNSTABLE: "a hot op with headroom but a shape that varies is not worth a hand-tuned kernel",
                WRITE: "all three conditions hold"}[want[1]]
        raise CheckFailed(f"{where}returned ({write!r}, {reason!r}, ...), {expected}. Hint: {hint}.")
    if not _close(predicted, want[2]):
        capped = row.ceiling / row.achieved < speedup
        hint = (f"in this model a kernel at best matches the measured ceiling (the best library's rate, not the "
                f"chip's peak), {row.ceiling / row.achieved:.3f}x the op's speed here: use the smaller of that and "
                "the proposed speedup" if capped else
                "Amdahl's law with the op's share and the proposed speedup")
        raise CheckFailed(f"{where}predicted {predicted!r}, {expected}. Hint: {hint}.")


# ================================================================== 8b: the block

HEAD_DIM = 64
MLP_RATIO = 4
Size = tuple[int, int, int]   # (B, N, C): batch, sequence length, model width (C a multiple of HEAD_DIM)

# The timing size: a narrow model (C = 512, 8 heads) over many tokens. The memory-bound glue (norms,
# residual adds, the GELU epilogue) grows like B*N*C and the matmuls like B*N*C^2, so a narrow block is
# where fusing the glue is a real share of the time; see the notebook's profile. B = 64, not 16: at
# B = 16 (0.6 ms of GPU work in eager) a block of the course's Triton launches and their tensors spent more
# time on the host than on the GPU, and measured 0.79-0.95x eager on an H100 with a spread of up to
# 50% between rounds (assets/results/calibration/ch08-h100/b16-calibration.json).
SPEED_SIZE: Size = (64, 1024, 512)
PROFILE_SIZE: Size = (16, 1024, 512)   # the size the shipped H100 profile was recorded at
CPU_SIZES: tuple[Size, ...] = ((1, 16, 64), (2, 33, 128), (1, 70, 64))
VISIBLE_SIZES: tuple[Size, ...] = ((2, 128, 128), (1, 200, 256), (3, 64, 192))
HIDDEN_SIZES: tuple[Size, ...] = ((1, 1, 64), (2, 17, 64), (1, 333, 128), (4, 256, 512), (1, 1025, 256))
INPUT_NAMES = ("x", "residual", "w_norm1", "w_qkv", "w_out", "w_norm2", "w_up", "b_up", "w_down")


def describe(size: Size) -> str:
    b, n, c = size
    return f"B={b} N={n:,} C={c} ({c // HEAD_DIM} heads of {HEAD_DIM}, MLP {MLP_RATIO * c})"


def make_inputs(size: Size, gen: torch.Generator, device: str, dtype=torch.float16):
    """x and residual of shape (B, N, C); weights scaled by 1/sqrt(fan-in), so every activation is O(1)."""
    b, n, c = size
    f = MLP_RATIO * c

    def randn(*shape, scale=1.0):
        return torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale

    tensors = (randn(b, n, c), randn(b, n, c), 1 + 0.1 * randn(c), randn(c, 3 * c, scale=c ** -0.5),
               randn(c, c, scale=c ** -0.5), 1 + 0.1 * randn(c), randn(c, f, scale=c ** -0.5), 0.1 * randn(f),
               randn(f, c, scale=f ** -0.5))
    return tuple(t.to(dtype) for t in tensors)


def make_output(size: Size, device: str) -> torch.Tensor:
    return torch.empty((2, *size), device=device, dtype=torch.float16)


def _gelu_tanh(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def _split_heads(qkv: torch.Tensor, b: int, n: int, c: int):
    """(B*N, 3C) -> q, k, v as (B, H, N, D) views."""
    return qkv.view(b, n, 3, c // HEAD_DIM, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)


def block_reference(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down):
    """The block in the inputs' precision (float64 when graded), attention exact, nothing rounded between."""
    b, n, c = x.shape
    r1 = (x + residual).reshape(b * n, c)
    q, k, v = _split_heads(rms_norm(r1, w_norm1) @ w_qkv, b, n, c)
    att = attention_reference(q.contiguous(), k.contiguous(), v.contiguous())
    r2 = att.transpose(1, 2).reshape(b * n, c) @ w_out + r1
    m = _gelu_tanh(rms_norm(r2, w_norm2) @ w_up + b_up) @ w_down
    return torch.stack((m.view(b, n, c), r2.view(b, n, c)))


def eager_block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down):
    """What a PyTorch user writes: linear layers (cuBLAS, the bias added in its epilogue), torch's SDPA
    for attention, the norm as above, GELU and the residual adds as separate kernels."""
    from torch.nn.functional import scaled_dot_product_attention

    b, n, c = x.shape
    r1 = (x + residual).view(b * n, c)
    q, k, v = _split_heads(rms_norm(r1, w_norm1) @ w_qkv, b, n, c)
    att = scaled_dot_product_attention(q, k, v)
    r2 = att.transpose(1, 2).reshape(b * n, c) @ w_out + r1
    m = _gelu_tanh(torch.addmm(b_up, rms_norm(r2, w_norm2), w_up)) @ w_down
    return m.view(b, n, c), r2.view(b, n, c)


def _compiled_block():
    return torch.compile(eager_block)


def _tolerance(size: Size) -> tuple[float, float]:
    """(rtol, atol) against the float64 reference.

    The block rounds to fp16 seven times between its input and its output (normed input, q/k/v,
    attention output, r2, normed r2, the GELU's output, m), each at most half an fp16 step (2^-11 of the
    value), and the matmuls after a rounding add up K such errors with random signs. Activations are O(1)
    (weights scaled by 1/sqrt(fan-in)). torch eager in fp16 stays within a third of (1e-2, 1e-2) at every
    visible size (tests/chapters/test_ch08.py checks it); a block that skips the norm's fp32, or a norm
    without its epsilon or weight, misses it by far."""
    return 1e-2, 1e-2


def block_flops(size: Size) -> int:
    """The block's matmuls (QKV, output projection, MLP up and down) and attention's two products."""
    b, n, c = size
    rows = b * n
    matmuls = 2 * rows * c * (3 * c + c + 2 * MLP_RATIO * c)
    return matmuls + attention_flops((b, c // HEAD_DIM, n, HEAD_DIM))


def block_bytes(size: Size) -> int:
    """The fewest bytes: read the inputs and weights once, write both outputs once (fp16)."""
    b, n, c = size
    f = MLP_RATIO * c
    return 2 * (2 * b * n * c + 2 * c + 3 * c * c + c * c + c * f + f + f * c + 2 * b * n * c)


BLOCK = Exercise(
    key="8b", title="transformer block from your kernels", where="the code cell under 'Exercise 8b'",
    signature="block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out)",
    arg_names=INPUT_NAMES,
    make_inputs=make_inputs, make_output=make_output,
    reference=block_reference,
    baseline=lambda *args: eager_block(*args[:-1]),
    baseline_name="torch eager",
    dtype=torch.float16,
    bytes_moved=block_bytes,
    visible_sizes=VISIBLE_SIZES,
    speed_size=lambda: SPEED_SIZE,
    describe_size=describe,
    ceiling="fp16_tflops",
    flops=block_flops,
    tolerance=_tolerance,
    others={"torch.compile": _compiled_block},
    cpu_sizes=CPU_SIZES,
    speed_hint="every op of the block one of your kernels: add_rmsnorm for both residual adds and norms, "
               "matmul_bias_act for the MLP's first matmul, your flash attention on contiguous q, k, v, and "
               "your matmul for the three other projections; only copies between them (splitting and "
               "merging heads).",
)

EXERCISES = (BLOCK,)
BAR_KEYS = {"8b": "8b"}
SANITIZER_TOOLS = ("memcheck",)
SANITIZE = (SmallSizes(BLOCK, "block", ((1, 1, 64), (2, 17, 64), (1, 70, 128))),)


def check_block(block, sizes=None, trials: int = 2):
    """Correctness of the learner's block against float64 (on a CPU: small sizes in Triton's interpreter)."""
    return check_correctness(BLOCK, block, sizes, trials)


def check_block_speed(block) -> SpeedResult:
    """The block at SPEED_SIZE against torch eager (bar "8b"), then its fusion, judged from the device
    trace of the timed calls (`require_fused`); torch.compile reported."""
    fn = as_learner(block)
    if not gpu_or_reason()[0]:
        # Nothing to time, but a stub or a broken block should say so rather than only "no GPU".
        check_correctness(BLOCK, fn, CPU_SIZES[:1], trials=1, verbose=False)
    result = check_speed(BLOCK, fn, "8b")
    if result is not None:   # timed on a GPU: the trace of the timed calls is there to judge
        require_fused(result.kernels)
    return result


# ------------------------------------------------------------------ fusion, from the device trace

# The block's seven ops, each one of the learner's kernels once the glue is fused into them: two
# add_rmsnorm (a residual add and its norm), the QKV projection, attention, the output projection, the
# MLP's first matmul with the bias and GELU in its epilogue, and the down projection. The speed bar alone
# cannot tell this apart from the same kernels unfused: an add kernel before each norm and a bias + GELU
# kernel after the matmul, ten launches, measured 1.16-1.18x eager against the bar of 1.1
# (assets/results/calibration/ch08-h100/calibration-unfused.json). Each unfused piece of glue is one more launch and
# one more round trip of the activations through memory, so the count is what the chapter teaches, read
# from the trusted trace. (Copies between the ops, to split and merge the heads, are torch's, not the
# learner's kernels, and do not count.)
FUSED_LAUNCHES = 7


def require_fused(kernels: KernelTime | None) -> None:
    """8b's fusion: at most FUSED_LAUNCHES of the learner's kernels per call of the block (grader.harness.fusion)."""
    require_launches(kernels, FUSED_LAUNCHES, "8b",
                     "two add_rmsnorm, four projections (the MLP's first with its bias and GELU in the epilogue, "
                     "matmul_bias_act) and attention",
                     "fuse each residual add into its norm and the bias and GELU into the matmul.")


# ================================================================== profiling the block (not graded)

def profile_block(size: Size = PROFILE_SIZE, rows: int = 15) -> str:
    """torch.profiler's table of the eager block at `size` on this GPU, by total CUDA time; without a GPU,
    the table recorded on an H100 (assets/results/calibration/ch08-h100/profile.txt), said so."""
    if not gpu_or_reason()[0]:
        text = (RECORDED / "profile.txt").read_text()
        print(f"No GPU here: this is the table recorded on an {RECORDED_GPU} by `assets/results/gpu_measure.sh ch08`.\n")
        print(text)
        return text
    text = record_profile(size, rows)
    print(text)
    return text


def record_profile(size: Size = PROFILE_SIZE, rows: int = 15) -> str:
    from torch.profiler import ProfilerActivity, profile

    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    inputs = make_inputs(size, gen, "cuda")
    with captured_stderr():
        for _ in range(3):   # warm up: cuBLAS heuristics and SDPA's kernel choice happen on the first calls
            eager_block(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                eager_block(*inputs)
            torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows, max_name_column_width=60)
    return f"eager block, {describe(size)}, fp16, 10 calls\n{table}"


# ------------------------------------------------------------------ the host-bound size (not graded)

HOST_BOUND_WAYS = ("eager", "eager, replayed as a CUDA graph", "torch.compile",
                   'torch.compile(mode="reduce-overhead")')


def _device_ms_per_call(fn: Callable[[], object], calls: int = 10) -> float:
    """GPU time per call: the kernels and copies torch.profiler saw on the device, over `calls` calls."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.time_range.elapsed_us() for e in prof.events() if e.device_type == DeviceType.CUDA) / calls / 1e3


def measure_host_bound(size: Size = PROFILE_SIZE) -> dict[str, float] | None:
    """The eager block at the profile's size (B = 16), the smallest the chapter times, where the host's share
    of a call is largest, timed four ways (HOST_BOUND_WAYS) on this GPU, with the GPU time of eager's kernels
    beside them: how much of a call the GPU waited for the host is the difference. A CUDA graph records the
    kernels of one call and replays them with one launch; `torch.compile(mode="reduce-overhead")` fuses the
    glue and replays through CUDA graphs too. Without a GPU: says so, and where an H100's figures are."""
    if not gpu_or_reason()[0]:
        print("No GPU here: this cell times the block four ways on your GPU. An H100's figures are in "
              "assets/results/notebooks/text-facts/h100/host-bound.txt.")
        return None
    if ungraded_timing_skipped("the host-bound block, four ways"):
        return None
    from ..harness.timing import bench

    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    inputs = make_inputs(size, gen, "cuda")
    with captured_stderr():
        # A graph is captured on a side stream after warm-up calls (cuBLAS and SDPA choose their kernels on
        # the first calls), as torch.cuda.graphs documents; replaying it reads and writes the same tensors.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                eager_block(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            eager_block(*inputs)
        compiled = torch.compile(eager_block)
        overhead = torch.compile(eager_block, mode="reduce-overhead")
        for fn in (compiled, overhead):
            for _ in range(3):   # reduce-overhead records its graphs on the first calls
                fn(*inputs)
        ways = dict(zip(HOST_BOUND_WAYS, (lambda: eager_block(*inputs), graph.replay, lambda: compiled(*inputs),
                                          lambda: overhead(*inputs))))
        times = {name: bench(fn) for name, fn in ways.items()}
        kernels_ms = _device_ms_per_call(ways["eager"])
    print(f"eager block, {describe(size)}, fp16: ms per call, and speedup over eager")
    for name, ms in times.items():
        print(f"  {name:<40} {ms:7.3f} ms   {times['eager'] / ms:5.2f}x")
    print(f"  eager's kernels alone: {kernels_ms:.3f} ms of GPU time per call; the rest of eager's "
          f"{times['eager']:.3f} ms the GPU waited for the host")
    return {**times, "eager kernels": kernels_ms}


@dataclasses.dataclass(frozen=True)
class OpCost:
    """One op of the eager block, timed alone: its time, and the bytes or FLOPs it must move or do."""
    op: str
    ms: float
    work: float
    bound: str      # "memory": work is bytes; "compute": work is FLOPs


def eager_ops(size: Size, inputs) -> dict[str, Callable[[], object]]:
    """The eager block cut into its ops, each a closure over its own inputs, for timing one at a time."""
    from torch.nn.functional import scaled_dot_product_attention

    x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down = inputs
    b, n, c = size
    r1 = (x + residual).view(b * n, c)
    n1 = rms_norm(r1, w_norm1)
    qkv = n1 @ w_qkv
    q, k, v = _split_heads(qkv, b, n, c)
    # SDPA returns its heads already laid out as (B, N, H, D): merging them is a view, not a copy.
    att = scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b * n, c)
    up = torch.addmm(b_up, n1, w_up)
    hidden = _gelu_tanh(up)
    return {
        "QKV matmul": lambda: n1 @ w_qkv,
        "attention (SDPA)": lambda: scaled_dot_product_attention(q, k, v),
        "output matmul": lambda: att @ w_out,
        "residual adds (2)": lambda: (x + residual, att + r1),
        "RMSNorm (2, eager)": lambda: (rms_norm(r1, w_norm1), rms_norm(r1, w_norm2)),
        "MLP up matmul + bias": lambda: torch.addmm(b_up, n1, w_up),
        "GELU": lambda: _gelu_tanh(up),
        "MLP down matmul": lambda: hidden @ w_down,
    }


def op_work(size: Size) -> dict[str, tuple[float, str]]:
    """Bytes (memory-bound ops) or FLOPs (compute-bound ones) of each op of `eager_ops`."""
    b, n, c = size
    rows, f, h = b * n, MLP_RATIO * c, c // HEAD_DIM
    act = 2 * rows * c   # one fp16 activation, bytes
    return {
        "QKV matmul": (2 * rows * c * 3 * c, "compute"),
        "attention (SDPA)": (attention_flops((b, h, n, HEAD_DIM)), "compute"),
        "output matmul": (2 * rows * c * c, "compute"),
        "residual adds (2)": (2 * 3 * act, "memory"),
        "RMSNorm (2, eager)": (2 * 2 * act, "memory"),      # the fewest: read r, write the normed r
        "MLP up matmul + bias": (2 * rows * c * f, "compute"),
        "GELU": (2 * 2 * rows * f, "memory"),
        "MLP down matmul": (2 * rows * f * c, "compute"),
    }


def measure_ops(size: Size = PROFILE_SIZE) -> list[OpCost]:
    """Each op of the eager block timed alone on this GPU (GPU only)."""
    from ..harness.timing import bench

    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    inputs = make_inputs(size, gen, "cuda")
    work = op_work(size)
    with captured_stderr():
        return [OpCost(name, bench(fn), *work[name]) for name, fn in eager_ops(size, inputs).items()]


def profile_rows(costs: list[OpCost], copy_gbps: float, fp16_tflops: float, unstable=()) -> list[ProfileRow]:
    """Profile rows from timed ops: each op's share of their total time and its rate against its ceiling."""
    total = sum(c.ms for c in costs)
    rows = []
    for c in costs:
        if c.bound == "memory":
            rate, ceiling = c.work / (c.ms * 1e-3) / 1e9, copy_gbps
        else:
            rate, ceiling = c.work / (c.ms * 1e-3) / 1e12, fp16_tflops
        rows.append(ProfileRow(c.op, c.ms / total, rate, ceiling, c.bound, c.op not in unstable))
    return rows


def recorded_rows() -> tuple[list[ProfileRow], dict]:
    """The profile rows recorded on an H100 (assets/results/calibration/ch08-h100/ops.json), and the record itself."""
    record = json.loads((RECORDED / "ops.json").read_text())
    costs = [OpCost(**c) for c in record["ops"]]
    return profile_rows(costs, record["ceilings"]["copy_gbps"], record["ceilings"]["fp16_tflops"]), record


def block_rows() -> list[ProfileRow]:
    """Profile rows of the eager block: measured here on a GPU, the recorded H100 ones without one."""
    from ..harness.ceilings import ceilings

    if not gpu_or_reason()[0]:
        rows, record = recorded_rows()
        print(f"No GPU here: rows recorded on an {record['gpu']} ({describe(tuple(record['size']))}).")
    else:
        ceil = ceilings()
        rows = profile_rows(measure_ops(), ceil.copy_gbps, ceil.fp16_tflops)
    for row in rows:
        print("  " + row.describe())
    return rows


def show_decisions(worth_writing, rows: list[ProfileRow], speedup: float = 3.0) -> None:
    """The learner's decision on each row, with the predicted end-to-end speedup."""
    print(f"{'op':<24}{'share':>7}{'of ceiling':>12}  {'decision':<22}{'predicted end-to-end':>22}")
    for row in rows:
        _, reason, predicted = worth_writing(row, speedup)
        print(f"{row.op:<24}{100 * row.share:>6.1f}%{100 * row.of_ceiling:>11.0f}%  {reason:<22}{predicted:>20.3f}x")


# ================================================================== what torch.compile writes

def inductor_code(size: Size = (2, 128, 128)) -> str:
    """The Triton code Inductor generates for the eager block on this GPU; without a GPU, the code recorded
    on an H100 (on a CPU, Inductor writes C++ and OpenMP, not Triton)."""
    if not gpu_or_reason()[0]:
        print(f"No GPU here: on a CPU Inductor generates C++ (with OpenMP), not Triton. This is the code it "
              f"generated for the block on an {RECORDED_GPU}, recorded by `assets/results/gpu_measure.sh ch08`.")
        return (RECORDED / "inductor_code.py").read_text()
    return record_inductor_code(size)


def record_inductor_code(size: Size = (2, 128, 128)) -> str:
    from torch._inductor.utils import run_and_get_code

    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    inputs = make_inputs(size, gen, "cuda")
    torch._dynamo.reset()
    with captured_stderr():
        _, codes = run_and_get_code(torch.compile(eager_block), *inputs)
    return "\n\n".join(codes)


def triton_kernels(code: str) -> list[str]:
    """The @triton.jit functions in Inductor's output, each as its source text."""
    kernels, lines, inside = [], code.splitlines(), None
    for line in lines:
        if line.strip().startswith("@triton.jit"):
            inside = [line]
        elif inside is not None:
            if line.startswith(("''', device_str=", '""", device_str=')):
                kernels.append("\n".join(inside))
                inside = None
            else:
                inside.append(line)
    return kernels


def summarize_inductor(code: str) -> None:
    """How many Triton kernels Inductor wrote, what each fuses (by name), and which ops it left to
    libraries (extern_kernels: cuBLAS matmuls; aten calls: SDPA)."""
    kernels = triton_kernels(code)
    names = [next((ln.split("def ")[1].split("(")[0] for ln in k.splitlines() if ln.startswith("def ")), "?")
             for k in kernels]
    print(f"Inductor wrote {len(kernels)} Triton kernels:")
    for name in names:
        print(f"  {name}")
    calls = [ln.strip() for ln in code.splitlines() if not ln.strip().startswith("#")]
    extern = sorted({c.split("extern_kernels.")[1].split("(")[0] for c in calls if "extern_kernels." in c})
    aten = sorted({c.split("torch.ops.aten.")[1].split("(")[0] for c in calls if "torch.ops.aten." in c})
    print("Left to libraries: " + ", ".join([f"extern_kernels.{e} (cuBLAS)" for e in extern] + [f"aten.{a}" for a in aten]))


# ================================================================== plots

def plot_results(*results: SpeedResult | None):
    """Your block's TFLOP/s beside torch eager's and torch.compile's, under the fp16 matmul ceiling."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 8 on {gpu}")


def plot_shares(rows: list[ProfileRow], title: str = ""):
    """Where the eager block's time goes: each op's share, coloured by what bounds it, with its % of ceiling."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    order = sorted(rows, key=lambda r: r.share)
    colours = ["tab:blue" if r.bound == "compute" else "tab:orange" for r in order]
    ax.barh([r.op for r in order], [100 * r.share for r in order], color=colours)
    for i, r in enumerate(order):
        ax.text(100 * r.share + 0.5, i, f"{100 * r.of_ceiling:.0f}% of ceiling", va="center", fontsize=8)
    ax.axvline(100 * MIN_SHARE, color="gray", linestyle="--", linewidth=1)
    ax.text(100 * MIN_SHARE, len(order) - 0.5, " hot above this", fontsize=8, color="gray")
    ax.set_xlabel("share of the block's time (%)  — blue: compute-bound, orange: memory-bound")
    ax.set_title(title or "eager block, op by op")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Exercise 8.P: the solution's block at B = 1, N = 256 (one short sequence), where the GPU waits for the host
# between the block's launches, beside the same block at the graded B = 64. Each rung is its Nsight Compute
# signature (the longest kernel, and the call's totals) joined to a device trace of calls run back to back
# (grader.profiling.timeline: the call's time, the share of it the GPU was busy, and the call replayed as a
# CUDA graph), recorded on an H200 (assets/profiles/H200/8b-host, by assets/results/notebooks/text-facts/run.sh's
# `diagnose`). Checked on a CPU; tests/profiles/test_diagnose.py checks the key against the recorded numbers.
HOST_BOUND_SIZE: Size = (1, 256, 512)
GRAPH_KEY = "capture the block in a CUDA graph after a few warm-up calls, and replay it"
DIAGNOSE = Case(
    key="8.P", exercise="8b-host", rung="b1", beside="b64", binding="host-bound", next_rung=GRAPH_KEY,
    choices=("chapter 5's larger tiles for the projections", GRAPH_KEY, "fuse each residual add into its norm",
             "16-byte loads in the bias and GELU epilogue"),
    why="The same kernels run at both sizes, but for one sequence of 256 tokens the GPU is busy for only part of "
        "each call (GPU busy%), far less than at B = 64: between kernels it waits for the host, for the launchers' "
        "Python, Triton's launch path and the driver. The kernels' own columns describe the time the GPU works; making any of them faster "
        "does not shorten the wait. Fewer launches do: replayed as a CUDA graph (recorded with them), the block at "
        "that size takes less time a call. The residual adds are already fused into the norms.",
    gpu="H200")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
