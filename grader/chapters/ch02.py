"""Chapter 2: memory coalescing, shared-memory tiles and bank conflicts.

Exercises
- 2.0  prediction: the 32-byte sectors one warp's loads touch at a given stride (CPU-checkable)
- 2.1  napkin math: bytes a transpose must move, and its time floor at a bandwidth (CPU-checkable)
- 2.2  prediction: how many ways a column read of a shared-memory tile conflicts (CPU-checkable)
- 2    `transpose(x, out)`: out = x.T, fp32, x rows x cols, a padded shared-memory tile with several
       rows per thread. Speed bar vs torch's transposed copy, the faster of `out.copy_(x.t())` and
       `x.t().contiguous()` in the same run (bars.toml "2"); stretch (float4 accesses) bar
       "2-stretch", reported but not graded

Every launcher takes torch tensors on the GPU that the grader allocated, and writes into `out`.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..cuda.gpu import free_gpu_bytes, gpu_or_reason
from ..errors import CheckFailed
from ..harness import answers, plots
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, require_close
from ..harness.ceilings import ceilings
from ..harness.exercise import (Exercise, SmallSizes, SpeedResult, check_correctness, check_speed, check_stretch,
                                measure_version, ungraded_timing_skipped)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench

SPEED_SHAPE = (8192, 8192)  # 256 MiB per matrix: about five times the largest current L2
WARP = 32
SECTOR_BYTES = 32
BANKS = 32

# Grader memory per element at the timing size: x, its snapshot, your out and torch's (4 bytes
# each), x.t().contiguous()'s result (4), and the float64 reference and float64 copy of your out
# that the check compares (8 each), with room for the comparison's temporaries.
_CHECK_BYTES_PER_ELEMENT = 80


def _timing_shape() -> tuple[int, int]:
    """8192 x 8192, halved (rows first) until the check fits in the GPU's free memory."""
    rows, cols = SPEED_SHAPE
    free = free_gpu_bytes()
    while rows * cols * _CHECK_BYTES_PER_ELEMENT > 0.8 * free and rows * cols > (1 << 22):
        if rows >= cols:
            rows //= 2
        else:
            cols //= 2
    return rows, cols


def _matrix(shape, gen: torch.Generator, device: str) -> tuple[torch.Tensor]:
    rows, cols = shape
    return (torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32),)


def _transposed_output(shape, device: str) -> torch.Tensor:
    rows, cols = shape
    return torch.empty(cols, rows, device=device, dtype=torch.float32)


def _shape(shape) -> str:
    return f"{shape[0]}×{shape[1]}"


TRANSPOSE = Exercise(
    key="2", title="matrix transpose", where="the code cell under 'Exercise 2'",
    signature="transpose(x, out)", arg_names=("x",),
    make_inputs=_matrix,
    make_output=_transposed_output,
    reference=lambda x: x.t(),
    baseline=lambda x, out: out.copy_(x.t()),
    baseline_name="out.copy_(x.t())",
    baseline_alternatives={"x.t().contiguous()": lambda x, out: x.t().contiguous()},
    dtype=torch.float32,
    bytes_moved=lambda shape: 2 * 4 * shape[0] * shape[1],
    visible_sizes=((64, 64), (100, 37), (1024, 2048)),
    speed_size=_timing_shape,
    describe_size=_shape,
    # A transpose does no arithmetic: it moves bits. Every element must be exactly the input's, so
    # the tolerance is zero; a kernel that rounds through fp16, bf16 or TF32 on the way fails.
    tolerance=lambda shape: (0.0, 0.0),
    speed_hint="stage each 32×32 tile in shared memory so that a warp reads a row of x and writes a row "
               "of out (both coalesced); pad the tile to [32][33] so that reading a column of it does not "
               "send all 32 threads to one bank; and launch blocks of 32×8 threads, each handling 4 rows "
               "of the tile in an unrolled loop, so that every thread has 4 loads in flight.",
)

EXERCISES = (TRANSPOSE,)
BAR_KEYS = {"2": "2", "2-stretch": "2"}
SANITIZE = (
    SmallSizes(TRANSPOSE, "transpose", ((1, 1), (31, 33), (100, 37), (64, 64), (257, 130))),
    SmallSizes(TRANSPOSE, "transpose_wide", ((4, 4), (31, 33), (36, 100), (100, 36), (132, 68)), stretch=True),
)

# The stretch goal's correctness shapes: float4 paths (multiples of 4, not of 32) and fallbacks (the
# graded hidden shapes live in the notebook's hidden tests).
STRETCH_SHAPES = ((1, 1), (1, 1000), (31, 33), (4, 4), (4, 1000), (1000, 4), (36, 100), (100, 36),
                  (2052, 516), (1024, 2048))


# ------------------------------------------------------------------ what the notebook calls

def check_transpose(transpose, sizes=None, trials: int = 2):
    return check_correctness(TRANSPOSE, transpose, sizes, trials)


def check_transpose_speed(transpose) -> SpeedResult:
    # The timing matrix is square, where a kernel that mixes up rows and cols can still be right:
    # check two non-square shapes first, so that such a kernel earns no speed points.
    check_correctness(TRANSPOSE, transpose, [(100, 37), (37, 100)], trials=1, verbose=False)
    return check_speed(TRANSPOSE, transpose, "2")


def measure_transpose(transpose, label: str) -> SpeedResult | None:
    """Time a version that is not graded (the naive kernel, the tile without padding) against the
    same torch baselines and the same bar; never raises (grader.harness.exercise.measure_version)."""
    return measure_version(TRANSPOSE, transpose, label, "2")


def check_transpose_stretch(transpose_wide) -> SpeedResult | None:
    return check_stretch(TRANSPOSE, transpose_wide, "2-stretch", STRETCH_SHAPES,
                         "transpose_wide and TRANSPOSE_WIDE_SRC")


def expected_sectors(stride: int, elem_bytes: int) -> int:
    """32-byte sectors touched when thread k of a warp reads the element at k * stride (from an
    address that is a multiple of 32)."""
    return len({(k * stride * elem_bytes) // SECTOR_BYTES for k in range(WARP)})


def check_sectors(sectors_per_warp) -> None:
    """Exercise 2.0: the sectors one warp's 32 loads touch, for a few strides and element sizes."""
    names = "`sectors_per_warp`"
    for stride, elem in ((1, 4), (2, 4), (4, 4), (8, 4), (32, 4), (1000, 4), (3, 4), (1, 2), (1, 8),
                         (1, 16), (2, 16)):
        hint = ("hint: thread k reads the bytes from k·stride·elem_bytes on; a sector is an aligned 32-byte "
                "block, so count the different sectors those 32 addresses fall in")
        require_close(call_learner(sectors_per_warp, stride, elem, exercise="2.0", names=names),
                      expected_sectors(stride, elem), f"sectors_per_warp({stride}, {elem}) ({hint})")
    require_close(call_learner(sectors_per_warp, 0, 4, exercise="2.0", names=names), 1,
                  "sectors_per_warp(0, 4) (hint: with stride 0 every thread reads the same element)")
    print("✓ 2.0 sectors per warp: right. A float read at stride 1 touches 4 sectors for 128 useful bytes; "
          "at stride 8 or more, 32 sectors (1,024 bytes fetched) for the same 128.")


def check_napkin_math(transpose_bytes, transpose_floor_ms) -> None:
    """Exercise 2.1: bytes a transpose must move, and the time they take at a bandwidth."""
    for rows, cols in ((8192, 8192), (1, 1), (3, 5000), (4097, 513)):
        require_close(call_learner(transpose_bytes, rows, cols, exercise="2.1",
                                   names="`transpose_bytes` and `transpose_floor_ms`"),
                      2 * 4 * rows * cols,
                      f"transpose_bytes({rows}, {cols}) (hint: every fp32 element is read once and written once)")
    for rows, cols, gbps in ((8192, 8192, 3000.0), (1000, 10, 1.0), (1, 1, 1000.0)):
        want = 8 * rows * cols / (gbps * 1e9) * 1e3
        require_close(call_learner(transpose_floor_ms, rows, cols, gbps, exercise="2.1",
                                   names="`transpose_floor_ms`"), want,
                      f"transpose_floor_ms({rows}, {cols}, {gbps!r}) (hint: bytes / (GB/s · 1e9) seconds; "
                      "answer in milliseconds)")
    print("✓ 2.1 napkin math: a transpose moves as many bytes as a copy of the same matrix, so its floor "
          "is the copy's")


def check_bank_conflicts(bank_conflict_ways) -> None:
    """Exercise 2.2: the conflict degree of a warp reading one column of a float tile in shared memory."""
    for row_words in (32, 33, 1, 64, 65, 34, 48, 8, 36, 31):
        require_close(call_learner(bank_conflict_ways, row_words, exercise="2.2", names="`bank_conflict_ways`"),
                      math.gcd(row_words, BANKS),
                      f"bank_conflict_ways({row_words}) (hint: thread k reads word k·{row_words} + c, which "
                      f"lives in bank (k·{row_words} + c) % 32; how many of the 32 threads share the busiest bank?)")
    print("✓ 2.2 bank conflicts: right. Rows of 32 floats put a whole column in one bank (32 ways); "
          "rows of 33 spread it over all 32 banks (no conflict).")


# ---------------------------------------------------------------- the stride experiment

STRIDES = (1, 2, 4, 8, 16, 32, 64)
_STRIDE_SOURCE_ELEMENTS = 1 << 26  # 256 MiB of fp32 that every stride reads from


def predicted_stride_gbps(sectors: float, copy_gbps: float) -> float:
    """Useful GB/s of a strided copy (strided reads, coalesced writes) if every sector the warp
    touches is fetched whole and the memory runs at the copy ceiling: per warp, 128 bytes read and
    128 written are useful, while 32 * sectors bytes are read and 128 written."""
    return copy_gbps * 2 * WARP * 4 / (SECTOR_BYTES * sectors + WARP * 4)


def plot_bandwidth_vs_stride(strided_copy: Callable, sectors_per_warp: Callable | None = None,
                             strides=STRIDES, device: str = "cuda"):
    """Time `strided_copy(src, dst, stride)` (dst[i] = src[i * stride]) for each stride, print a table
    and plot the useful bandwidth (8 bytes per copied float / time) against the stride, with the
    prediction from `sectors_per_warp` and the copy ceiling."""
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    if ungraded_timing_skipped("the sweep"):
        return None
    with captured_stderr():
        copy_gbps = ceilings().copy_gbps
    total = _STRIDE_SOURCE_ELEMENTS
    while 8 * total > 0.5 * free_gpu_bytes() and total > (1 << 16):
        total //= 2
    gen = torch.Generator(device=device).manual_seed(torch.seed())
    src = torch.randn(total, generator=gen, device=device, dtype=torch.float32)
    measured, predicted = [], []
    with captured_stderr():
        for stride in tqdm(strides, desc="strides"):
            n = total // stride
            dst = torch.full((n,), float("nan"), device=device, dtype=torch.float32)
            strided_copy(src, dst, stride)
            if not torch.equal(dst, src[::stride][:n]):
                raise CheckFailed(f"strided_copy(src, dst, {stride}) did not copy src[i * {stride}] into dst[i] "
                                  f"for every i < {n:,}")
            ms = bench(lambda: strided_copy(src, dst, stride))
            measured.append(2 * 4 * n / (ms * 1e-3) / 1e9)
            del dst
    if sectors_per_warp is not None:
        try:
            predicted = [predicted_stride_gbps(sectors_per_warp(s, 4), copy_gbps) for s in strides]
        except NotImplementedError:
            print("(no prediction drawn: sectors_per_warp is not written yet)")
    print(f"{'stride':>6}  {'sectors/warp':>12}  {'useful GB/s':>11}  {'% of copy':>9}"
          + (f"  {'predicted GB/s':>14}" if predicted else ""))
    for k, stride in enumerate(strides):
        line = (f"{stride:>6}  {expected_sectors(stride, 4):>12}  {measured[k]:>11,.0f}  "
                f"{100 * measured[k] / copy_gbps:>8.0f}%")
        print(line + (f"  {predicted[k]:>14,.0f}" if predicted else ""))

    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(strides, measured, marker="o", color="tab:orange", label="strided_copy, measured")
    if predicted:
        ax.plot(strides, predicted, marker=".", linestyle=":", color="tab:blue",
                label="predicted: 32-byte sectors at the copy ceiling")
    ax.axhline(copy_gbps, color="black", linestyle="--", linewidth=1)
    ax.text(strides[-1], copy_gbps * 1.02, f"copy ceiling {copy_gbps:,.0f} GB/s", ha="right", va="bottom",
            fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(strides), [str(s) for s in strides])
    ax.set_ylim(0, copy_gbps * 1.15)
    ax.set_xlabel("stride (floats between the elements that neighbouring threads read)")
    ax.set_ylabel("useful GB/s\n(8 bytes per copied float / time)")
    ax.set_title(f"Strided reads, coalesced writes ({total * 4 / 2**20:.0f} MiB source)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# -------------------------------------------------------------------------------- plots

def plot_ladder(results: dict[str, SpeedResult | None]):
    """One bar per version of your transpose, beside torch's two transposed copies, under the copy
    ceiling; each bar says its speedup over the faster torch version and its share of the ceiling."""
    shown = [r for r in results.values() if r is not None]
    title = f"Transpose {shown[-1].size} on {shown[-1].gpu}" if shown else ""
    return plots.plot_results(results, title=title)


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="2.P", exercise="2", rung="unpadded_tile", beside="naive", binding="bank-conflicts",
    next_rung="pad the shared tile to 32 x 33",
    choices=("pad the shared tile to 32 x 33", "read rows and write columns directly, without a tile",
             "16-byte loads", "more threads per block"),
    why="The tile fixed the naive kernel's stores (32 sectors per request down to 4), but a column of the "
        "unpadded tile sits in one bank: 32-way loads and the mio throttle stall. One column of padding "
        "spreads a column over all 32 banks.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
