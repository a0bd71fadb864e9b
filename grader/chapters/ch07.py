"""Chapter 7: reductions and normalisation.

Exercises
- 7.0  napkin math: the bytes a row softmax must move, and the bytes of a three-pass kernel (CPU-checkable)
- 7.1  `combine(a, b)`: merge two partial online-softmax statistics (max, sum of exponentials)
       (CPU-checkable)
- 7.2  `occupancy(threads, registers, shared, arch)`: resident blocks per SM and the occupancy they give,
       from a launch's resources and an architecture's limits (CPU-checkable; on a GPU the notebook
       compares it with the CUDA driver's own calculation for the learner's kernel)
- 7a   `softmax(x, out)`: row softmax, fp32, CUDA C through CuPy, any row length. Speed bar vs
       `torch.softmax` (bars.toml "7a")
- 7b   `add_rmsnorm(x, residual, weight, out, residual_out)`: residual_out = x + residual, and
       out = RMSNorm(residual_out) * weight with fp32 statistics, fp16 or bf16, in Triton. Speed bar vs
       torch eager (bars.toml "7b"); torch.compile reported, never graded
- 7.P  diagnose, two cases: the softmax with its row on chip beside the solution (occupancy), and 7b's
       unfused rung beside the fused one (its extra pass); for each, the binding constraint of the first rung
       and the rung that relieves it (CPU-checkable; `DIAGNOSE`)
- 7c   stretch, `groupnorm_silu(x, weight, bias, out)`: GroupNorm (32 groups) then SiLU, fp16, in
       Triton, against torch eager and torch.compile (bars.toml "7-stretch", reported only)

7b's launcher writes two outputs. The harness hands every launcher one `out`, so 7b's is stacked,
(2, rows, hidden), and the learner's function receives its slices `out[0]` (the normalised rows) and
`out[1]` (the residual sum) as `out` and `residual_out` (grader.calls.seam: with_split_output).
Without a GPU, 7b and 7c run in Triton's interpreter at small sizes, like chapters 5 and 6; 7a's CUDA
C needs a GPU (NVRTC still says whether it compiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

import torch

from ..cuda import archs
from ..cuda.archs import KIB, WARP, Arch
from ..cuda.gpu import arch_here, free_gpu_bytes, gpu_or_reason
from ..errors import CheckFailed, LadderError
from ..harness import answers, plots
from ..harness.answers import call_learner, require_close
from ..harness.exercise import (
    Exercise,
    SmallSizes,
    SpeedResult,
    as_learner,
    check_correctness,
    check_speed,
    check_stretch,
    ungraded_timing_skipped,
)
from ..harness.fusion import require_launches
from ..harness.norms import RMS_EPS, add_rms_norm, rms_norm  # noqa: F401  (the notebook reads ch07.RMS_EPS)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench
from ..profiles.diagnose import Case

# ================================================================== 7a: row softmax

SoftmaxSize = tuple[int, int]   # (rows, cols)

# The timing size: 4,096 rows of 32,000 (Llama 2's vocabulary: the softmax over a language model's
# logits). Long rows are where a hand-written kernel has room: torch keeps a row of up to 48 KiB in
# shared memory and reads it once, but longer rows take several passes over memory. On an H100 a
# one-block-per-row online softmax with 16-byte loads measured 1.25x torch at 4,096 x 32,768, the same
# kernel without 16-byte loads 0.95x, three passes with an interleaved reduction 0.70x
# (single runs of probes, before the bars existed: assets/results/calibration/ch07-h100/README.md).
SOFTMAX_SPEED_SIZE: SoftmaxSize = (4096, 32000)
SOFTMAX_VISIBLE: tuple[SoftmaxSize, ...] = ((64, 1000), (8, 31), (4, 4096), (2, 50257), (1, 1))
SOFTMAX_HIDDEN: tuple[SoftmaxSize, ...] = ((1000, 1), (3, 50260), (257, 33), (1, 131072), (4096, 7), (5, 1025))
# Rows are shifted by these offsets in turn: a softmax that does not subtract the row's maximum first
# overflows (exp(100) is beyond fp32's range) and returns NaN or infinity.
ROW_OFFSETS = (0.0, 100.0, -50.0, 30.0)


def _softmax_inputs(size: SoftmaxSize, gen: torch.Generator, device: str):
    rows, cols = size
    x = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32) * 3
    offsets = torch.tensor(ROW_OFFSETS, device=device, dtype=torch.float32).repeat(rows // len(ROW_OFFSETS) + 1)
    return (x + offsets[:rows, None],)


def _softmax_output(size: SoftmaxSize, device: str) -> torch.Tensor:
    return torch.empty(size, device=device, dtype=torch.float32)


def _softmax_tolerance(size: SoftmaxSize) -> tuple[float, float]:
    """(rtol, atol) against float64, and why.

    Each output is exp(x - max) / sum: a correct fp32 kernel errs by the exponential's rounding and the
    sum's (a few 1e-7 with partial sums per thread). CUDA's fast `__expf` errs by at most 2 + floor(|1.173 x|)
    ulp (CUDA C++ Programming Guide, intrinsic functions): the arguments here are x - max <= 0, and the
    outputs that matter at this tolerance have x - max above about -20, 25 ulp, 3e-6 relative. rtol = 1e-4 leaves 30x room, and it is relative to
    every output however small, because atol is tiny: at 50,257 columns the outputs are about 2e-5, so
    an absolute tolerance of 1e-6 would let a sum that missed 3% of the row pass. A reduction that drops
    one element of 31 is 3% out everywhere."""
    return 1e-4, 1e-12


def _softmax_speed_size() -> SoftmaxSize:
    """SOFTMAX_SPEED_SIZE, with rows halved until the check (two input sets, outputs, a float64
    reference) fits in 80% of free memory."""
    rows, cols = SOFTMAX_SPEED_SIZE
    while 40 * rows * cols > 0.8 * free_gpu_bytes() and rows > 256:
        rows //= 2
    return rows, cols


SOFTMAX = Exercise(
    key="7a", title="row softmax", where="the code cell under 'Exercise 7a'",
    signature="softmax(x, out)", arg_names=("x",),
    make_inputs=_softmax_inputs, make_output=_softmax_output,
    reference=lambda x: torch.softmax(x, dim=-1),
    baseline=lambda x, out: torch.softmax(x, dim=-1),
    baseline_name="torch.softmax",
    dtype=torch.float32,
    bytes_moved=lambda s: 8 * s[0] * s[1],
    visible_sizes=SOFTMAX_VISIBLE,
    speed_size=_softmax_speed_size,
    describe_size=lambda s: f"{s[0]:,} rows x {s[1]:,}",
    tolerance=_softmax_tolerance,
    speed_hint="one block of 1,024 threads per row; one pass that keeps an online (max, sum) per thread and "
               "reads 16-byte float4s when the row length is a multiple of 4; warp shuffles, then one value "
               "per warp through shared memory; a second pass that re-reads the row (mostly from DRAM: L2 keeps "
               "about a third of it) and writes it.",
)

# ================================================================== 7b: residual add + RMSNorm

NormSize = tuple[int, int]   # (rows, hidden)

# 16,384 tokens of a model 4,096 wide (a Llama 7B layer's width): 128 MiB per fp16 tensor, far beyond
# any L2, so every pass is a trip to memory. Eager runs the add and the norm's eight kernels (upcast, square,
# mean, add eps, rsqrt, multiply, downcast, the weight) one after another, several in fp32.
NORM_SPEED_SIZE: NormSize = (16384, 4096)
NORM_VISIBLE: tuple[NormSize, ...] = ((64, 4096), (100, 1000), (7, 31))
NORM_HIDDEN: tuple[NormSize, ...] = ((1, 1), (5, 8192), (300, 5120), (33, 2048), (2, 4097))
NORM_CPU: tuple[NormSize, ...] = ((4, 64), (5, 100), (3, 1000))
# Row scales are drawn from 10^U(LOW, HIGH), and row 1 is all zeros: mean(r^2) then ranges from far
# below RMS_EPS to far above it, so a norm without the epsilon (NaN on the zero row, outputs several
# times too large on the small ones) or with the wrong one fails.
ROW_SCALE_LOG10 = (-3.5, 1.0)


def _norm_inputs(size: NormSize, gen: torch.Generator, device: str, dtype=torch.float16):
    rows, hidden = size

    def scaled():
        low, high = ROW_SCALE_LOG10
        scale = 10 ** (low + (high - low) * torch.rand(rows, 1, generator=gen, device=device))
        t = torch.randn(rows, hidden, generator=gen, device=device) * scale
        if rows > 1:
            t[1] = 0
        return t.to(dtype)

    weight = (1 + 0.1 * torch.randn(hidden, generator=gen, device=device)).to(dtype)
    return scaled(), scaled(), weight


def _norm_output(size: NormSize, device: str, dtype=torch.float16) -> torch.Tensor:
    return torch.empty((2, *size), device=device, dtype=dtype)


def add_rmsnorm_reference(x, residual, weight) -> torch.Tensor:
    """(2, rows, hidden): the normalised rows, then the residual sum, in the inputs' precision."""
    normed, r = add_rms_norm(x, residual, weight)
    return torch.stack((normed, r))


def eager_add_rmsnorm(x, residual, weight, out=None):
    """What a PyTorch user writes: the residual add, then RMSNorm as Hugging Face's Llama writes it."""
    return add_rms_norm(x, residual, weight)


def _compiled_add_rmsnorm():
    return torch.compile(add_rms_norm)


def _norm_tolerance_for(dtype: torch.dtype) -> Callable[[NormSize], tuple[float, float]]:
    """(rtol, atol) against float64. Outputs are O(1) (rows normalised, weights 1 +- 0.1) and the residual
    sum is as large as its inputs; a correct kernel rounds each once to the storage type: 2^-11 of the
    value in fp16, 2^-8 in bf16. The tolerances leave 4x room for that, and for fp32 statistics
    against float64 (about 1e-7). A norm without its epsilon misses by far on the grader's small and
    zero rows, and so does one that divides by the padded width (tests/chapters/test_ch07.py)."""
    tol = (2e-3, 2e-3) if dtype == torch.float16 else (1.6e-2, 1.6e-2)
    return lambda size: tol


def _norm_exercise(dtype: torch.dtype) -> Exercise:
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]
    return Exercise(
        key="7b", title=f"fused residual add + RMSNorm ({name})", where="the code cell under 'Exercise 7b'",
        signature="add_rmsnorm(x, residual, weight, out, residual_out)", arg_names=("x", "residual", "weight"),
        make_inputs=lambda s, gen, dev: _norm_inputs(s, gen, dev, dtype),
        make_output=lambda s, dev: _norm_output(s, dev, dtype),
        reference=add_rmsnorm_reference,
        baseline=eager_add_rmsnorm,
        baseline_name="torch eager",
        dtype=dtype,
        bytes_moved=lambda s: 2 * (4 * s[0] * s[1] + s[1]),
        visible_sizes=NORM_VISIBLE,
        speed_size=lambda: NORM_SPEED_SIZE,
        describe_size=lambda s: f"{s[0]:,} rows x {s[1]:,} ({name})",
        tolerance=_norm_tolerance_for(dtype),
        others={"torch.compile": _compiled_add_rmsnorm},
        cpu_sizes=NORM_CPU,
        split_output=True,
        speed_hint="one program per row that loads x and residual once, adds them in fp32, stores the sum, "
                   "reduces the sum of squares with tl.sum and stores the normalised row: four memory passes "
                   "in all. BLOCK = triton.next_power_of_2(hidden), with 8 warps for rows of 4,096.",
    )


ADD_RMSNORM = _norm_exercise(torch.float16)
ADD_RMSNORM_BF16 = _norm_exercise(torch.bfloat16)

# ================================================================== 7c (stretch): GroupNorm + SiLU

GroupSize = tuple[int, int, int, int]   # (N, C, H, W)
GROUPS = 32
GROUP_EPS = 1e-5
GROUP_SPEED_SIZE: GroupSize = (16, 512, 64, 64)   # a diffusion U-Net's 64x64 stage


def _group_inputs(size: GroupSize, gen: torch.Generator, device: str):
    c = size[1]
    x = torch.randn(size, generator=gen, device=device) * 2 + 0.5
    weight = 1 + 0.1 * torch.randn(c, generator=gen, device=device)
    bias = 0.1 * torch.randn(c, generator=gen, device=device)
    return x.half(), weight.half(), bias.half()


def groupnorm_silu_reference(x, weight, bias):
    return torch.nn.functional.silu(torch.nn.functional.group_norm(x, GROUPS, weight, bias, GROUP_EPS))


GROUPNORM_SILU = Exercise(
    key="7c", title="fused GroupNorm + SiLU", where="the code cell under 'Stretch: GroupNorm + SiLU'",
    signature="groupnorm_silu(x, weight, bias, out)", arg_names=("x", "weight", "bias"),
    make_inputs=_group_inputs, make_output=lambda s, dev: torch.empty(s, device=dev, dtype=torch.float16),
    reference=groupnorm_silu_reference,
    baseline=lambda x, w, b, out: groupnorm_silu_reference(x, w, b),
    baseline_name="torch eager",
    dtype=torch.float16,
    bytes_moved=lambda s: 2 * 2 * s[0] * s[1] * s[2] * s[3],
    visible_sizes=((2, 64, 8, 8), (1, 96, 7, 5), (4, 320, 16, 16)),
    speed_size=lambda: GROUP_SPEED_SIZE,
    describe_size=lambda s: f"N={s[0]} C={s[1]} H={s[2]} W={s[3]}, {GROUPS} groups",
    tolerance=lambda s: (2e-3, 2e-3),
    others={"torch.compile": lambda: torch.compile(groupnorm_silu_reference)},
    cpu_sizes=((1, 64, 4, 4), (2, 32, 3, 5)),
)

EXERCISES = (SOFTMAX, ADD_RMSNORM, GROUPNORM_SILU)
BAR_KEYS = {"7a": "7a", "7b": "7b", "7-stretch": "7c"}
SANITIZE = (
    SmallSizes(SOFTMAX, "softmax", ((1, 1), (3, 31), (2, 1000), (1, 4100))),
    SmallSizes(ADD_RMSNORM, "add_rmsnorm", ((1, 1), (3, 31), (2, 1000))),
    SmallSizes(GROUPNORM_SILU, "groupnorm_silu", ((1, 64, 4, 4),), stretch=True),
)


# ------------------------------------------------------------------ what the notebook calls

def check_softmax(softmax, sizes=None, trials: int = 2):
    return check_correctness(SOFTMAX, softmax, sizes, trials)


def check_softmax_speed(softmax) -> SpeedResult:
    return check_speed(SOFTMAX, softmax, "7a")


def check_add_rmsnorm(add_rmsnorm, sizes=None, trials: int = 2, dtype: torch.dtype = torch.float16):
    ex = ADD_RMSNORM_BF16 if dtype == torch.bfloat16 else ADD_RMSNORM
    return check_correctness(ex, add_rmsnorm, sizes, trials)


# 7b fused is one kernel: it reads x and the residual once, writes the sum and the normalised rows. An add kernel
# then a norm kernel makes one more pass over the matrix, and on an H200 that still clears the bar (5.73-5.75x
# against 5.4, assets/results/calibration/course-h200x4), because torch eager's nine kernels (the add, and the
# norm's eight) run further under the copy ceiling there than on an H100. The launch count is the same on every
# GPU (grader.harness.fusion).
NORM_LAUNCHES = 1


def check_add_rmsnorm_speed(add_rmsnorm) -> SpeedResult:
    """7b against torch eager (bar "7b"), then its fusion, from the device trace of the timed calls."""
    fn = as_learner(add_rmsnorm)
    if not gpu_or_reason()[0]:
        # Nothing to time, but a stub or a broken kernel should say so rather than only "no GPU".
        check_correctness(ADD_RMSNORM, fn, NORM_CPU[:1], trials=1, verbose=False)
    result = check_speed(ADD_RMSNORM, fn, "7b")
    if result is not None:   # timed on a GPU: the trace of the timed calls is there to judge
        require_norm_fused(result.kernels)
    return result


def require_norm_fused(kernels) -> None:
    """7b's fusion: one launch of the learner's kernels per call."""
    require_launches(kernels, NORM_LAUNCHES, "7b", "one kernel that adds, writes the sum and normalises each row",
                     "add the residual inside the norm kernel, where the row is already loaded.")


def check_groupnorm_silu_stretch(groupnorm_silu) -> SpeedResult | None:
    if gpu_or_reason()[0]:
        return check_stretch(GROUPNORM_SILU, groupnorm_silu, "7-stretch", GROUPNORM_SILU.visible_sizes,
                             "groupnorm_silu")
    # Without a GPU check_stretch would stop at "no GPU" before timing; the interpreter can still check
    # correctness at the CPU sizes, which is all a CPU can say about a stretch goal.
    try:
        check_correctness(GROUPNORM_SILU, groupnorm_silu, GROUPNORM_SILU.cpu_sizes, trials=1)
    except NotImplementedError:
        print("Stretch goal not attempted yet: write groupnorm_silu above to try it.")
    except LadderError as exc:
        print(str(exc))
    return None


# ================================================================== 7.0: napkin math

def check_napkin_math(softmax_bytes, three_pass_bytes) -> None:
    """Exercise 7.0: the fewest bytes a row softmax moves, and the bytes of a kernel that reads each row
    three times (max, sum, normalise) and writes it once."""
    names = "`softmax_bytes` and `three_pass_bytes`"
    for rows, cols in ((1, 1), (4096, 32000), (3, 50257)):
        require_close(call_learner(softmax_bytes, rows, cols, exercise="7.0", names=names), 8 * rows * cols,
                      f"softmax_bytes({rows}, {cols}) (hint: fp32 is 4 bytes; every element read once and written once)")
        require_close(call_learner(three_pass_bytes, rows, cols, exercise="7.0", names=names), 16 * rows * cols,
                      f"three_pass_bytes({rows}, {cols}) (hint: three reads of the row and one write)")
    print("✓ 7.0 napkin math: a three-pass softmax moves 2x the bytes a one-read kernel must")


# ================================================================== 7.2: occupancy

@dataclass(frozen=True)
class Occupancy:
    """What the chapter's occupancy model says about a launch on one architecture."""
    blocks: int          # resident blocks per SM
    fraction: float      # resident warps / the SM's maximum warps
    limiters: tuple      # of "threads", "blocks", "registers", "shared memory": every limit that allows `blocks`

    @property
    def limiter(self) -> str:
        """The limits that bind, in words: one, or several that allow the same number of blocks."""
        return " and ".join(self.limiters)

    def describe(self) -> str:
        alike = " alike" if len(self.limiters) > 1 else ""
        return f"{self.blocks} blocks per SM, occupancy {100 * self.fraction:.0f}% (limited by {self.limiter}{alike})"


REGISTER_UNIT = 256          # registers are handed to a warp in units of 256 (8 per thread)
SHARED_UNIT = 128            # shared memory is handed to a block in units of 128 bytes


def occupancy_reference(threads: int, registers: int, shared: int, arch: Arch) -> Occupancy:
    """The answer key of 7.2: each limit on resident blocks per SM, the smallest of them, the occupancy.

    - threads: floor(max threads per SM / (warps per block * 32));
    - blocks: the architecture's maximum resident blocks per SM;
    - registers: a warp takes ceil(registers * 32 / 256) * 256 registers, all from one of the SM's four
      sub-partitions, each a quarter of the register file: floor(registers per SM / 4 / that) warps fit
      in each, four times that in the SM, and floor(those / warps per block) blocks (the driver's rule,
      cudaOccMaxBlocksPerSMRegsLimit in CUDA's cuda_occupancy.h);
    - shared memory: a block takes its shared memory plus what the runtime reserves per block (1 KiB
      from compute capability 8.0), rounded up to 128 bytes; floor(the SM's shared memory / that).
    The notebook compares the result with the driver's own calculator
    (cuOccupancyMaxActiveBlocksPerMultiprocessor) on the learner's kernel."""
    warps = -(-threads // WARP)
    limits = {"threads": arch.max_threads_per_sm // (warps * WARP), "blocks": arch.max_blocks_per_sm}
    if registers:
        per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
        per_sub_partition = (arch.registers_per_sm // arch.sub_partitions) // per_warp
        limits["registers"] = (per_sub_partition * arch.sub_partitions) // warps
    per_block = -(-(shared + arch.reserved_shared_per_block) // SHARED_UNIT) * SHARED_UNIT
    if per_block:
        limits["shared memory"] = arch.shared_per_sm // per_block
    blocks = min(limits.values())
    binding = tuple(name for name, allowed in limits.items() if allowed == blocks)
    return Occupancy(blocks, blocks * warps * WARP / arch.max_threads_per_sm, binding)


# (threads, registers, shared bytes, architecture): every limiter, on the course's architectures. In
# (64, 40, 0, "sm_90") and (96, 40, 0, "sm_90") the register file's four sub-partitions decide: 24 and 16
# blocks, where one undivided file of 65,536 registers would give 25 and 17.
OCCUPANCY_VISIBLE = ((256, 32, 0, "sm_90"), (1024, 32, 256, "sm_90"), (128, 64, 0, "sm_86"),
                     (256, 40, 48 * KIB, "sm_80"), (64, 16, 0, "sm_75"), (64, 40, 0, "sm_90"))
OCCUPANCY_HIDDEN = ((1024, 33, 0, "sm_90"), (96, 255, 0, "sm_89"), (32, 8, 0, "sm_90"), (512, 72, 100 * KIB, "sm_90"),
                    (96, 40, 0, "sm_90"),
                    (1024, 64, 0, "sm_75"), (160, 24, 30 * KIB, "sm_86"), (768, 40, 1000, "sm_89"))


def check_occupancy(occupancy, hidden: bool = False) -> None:
    """Exercise 7.2: `occupancy(threads, registers, shared, arch)` returns (blocks per SM, occupancy)."""
    cases = OCCUPANCY_VISIBLE + (OCCUPANCY_HIDDEN if hidden else ())
    for threads, registers, shared, name in cases:
        arch = archs.by_name(name)
        want = occupancy_reference(threads, registers, shared, arch)
        got = call_learner(occupancy, threads, registers, shared, arch, exercise="7.2", names="`occupancy`")
        where = (f"7.2: occupancy(threads={threads}, registers={registers}, shared={shared:,}, {name}) returned "
                 f"{got!r}, expected ({want.blocks}, {want.fraction:.4f}): {want.describe()}")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(where + ". It should return a tuple (blocks, occupancy).")
        blocks, fraction = got
        if blocks != want.blocks:
            smallest = (f"the {want.limiter} limit is the smallest here" if len(want.limiters) == 1 else
                        f"the {want.limiter} limits are the smallest here, and equal")
            raise CheckFailed(where + f". Hint: work out each of the four limits; {smallest}.")
        if not math.isclose(float(fraction), want.fraction, rel_tol=1e-6):
            raise CheckFailed(where + ". Hint: occupancy is resident warps over the SM's maximum warps.")
    which = "visible and hidden" if hidden else "visible"
    print(f"✓ 7.2 occupancy: right on {len(cases)} {which} launches")


def kernel_resources(kernel, arch: Arch | None = None):
    """(registers per thread, static shared bytes) of a kernel made with load_kernel: from the GPU's
    loaded function on a GPU, else from ptxas's report through NVRTC for `arch` (no GPU needed)."""
    if gpu_or_reason()[0] and arch is None:
        function = kernel.compile()
        return int(function.num_regs), int(function.shared_size_bytes)
    from ..cuda.nvrtc import compile_cuda
    from ..cuda.resources import VERBOSE, parse_report

    arch = arch or archs.by_name("sm_90")
    compiled = compile_cuda(kernel.source, kernel.name, arch.name, (VERBOSE,), ("ptx", "cubin"))
    usage = parse_report(compiled.log)[kernel.name]
    return usage.registers, usage.static_shared


def driver_blocks_per_sm(kernel, threads: int, dynamic_shared: int = 0) -> int:
    """The CUDA driver's count of resident blocks per SM for this kernel and block size (GPU only)."""
    import cupy

    function = kernel.compile()
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        getattr(function, "kernel", function).ptr, threads, dynamic_shared))


def compare_occupancy(occupancy, kernel, threads: int) -> None:
    """Your `occupancy` on your own kernel's resources, beside the CUDA driver's calculation on this GPU
    (without a GPU: the resources ptxas reports for an H100, and the chapter's model)."""
    here = arch_here()
    arch = here or archs.by_name("sm_90")
    registers, shared = kernel_resources(kernel, None if here else arch)
    blocks, fraction = occupancy(threads, registers, shared, arch)
    model = occupancy_reference(threads, registers, shared, arch)
    print(f"{kernel.name}: {registers} registers a thread, {shared:,} bytes of static shared memory, "
          f"{threads} threads a block, on {arch.name}")
    print(f"  yours:  {blocks} blocks per SM, occupancy {100 * fraction:.0f}%")
    print(f"  model:  {model.describe()}")
    if here is None:
        print("  (no GPU here: the driver's figure needs one)")
        return
    driver = driver_blocks_per_sm(kernel, threads)
    warps = -(-threads // WARP)
    print(f"  driver: {driver} blocks per SM, occupancy {100 * driver * warps * WARP / arch.max_threads_per_sm:.0f}% "
          "(cuOccupancyMaxActiveBlocksPerMultiprocessor)")
    if driver != blocks:
        print("  They differ: see which limit your function applies differently from the driver.")


# ================================================================== 7.1: online softmax statistics

NEG_INF = float("-inf")


def combine_reference(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Merge (m, s) statistics of two parts of a row: m the part's maximum, s = sum(exp(x - m)).
    An empty part is (-inf, 0)."""
    (m1, s1), (m2, s2) = a, b
    m = max(m1, m2)
    if m == NEG_INF:
        return NEG_INF, 0.0
    return m, s1 * math.exp(m1 - m) + s2 * math.exp(m2 - m)


COMBINE_CASES = (((1.0, 2.0), (3.0, 1.5)), ((3.0, 1.5), (1.0, 2.0)), ((0.0, 1.0), (0.0, 1.0)),
                 ((NEG_INF, 0.0), (2.0, 3.0)), ((5.0, 1.0), (NEG_INF, 0.0)), ((NEG_INF, 0.0), (NEG_INF, 0.0)),
                 ((1000.0, 1.0), (999.0, 2.0)), ((-80.0, 4.0), (-120.0, 7.0)))


def check_combine(combine) -> None:
    """Exercise 7.1: merging partial statistics, empty parts and values that overflow exp() included."""
    for a, b in COMBINE_CASES:
        want = combine_reference(a, b)
        got = call_learner(combine, a, b, exercise="7.1", names="`combine`")
        ok = isinstance(got, (tuple, list)) and len(got) == 2
        if ok:
            try:
                ok = (float(got[0]) == want[0] or math.isclose(float(got[0]), want[0])) and \
                    math.isclose(float(got[1]), want[1], rel_tol=1e-9, abs_tol=1e-300)
            except (TypeError, ValueError):
                ok = False
        if not ok:
            hint = ("an empty part is (-inf, 0): exp(-inf - (-inf)) is NaN, so handle a merged maximum of -inf "
                    "first" if NEG_INF in (a[0], b[0]) else
                    "rescale each sum to the new maximum, s_i * exp(m_i - m), never exp(m_i) alone: "
                    "exp(1000) overflows" if max(a[0], b[0]) > 700 else
                    "m = max(m1, m2); s = s1 * exp(m1 - m) + s2 * exp(m2 - m)")
            raise CheckFailed(f"7.1: combine({a}, {b}) returned {got!r}, expected {want}. Hint: {hint}.")
    print(f"✓ 7.1 combine: right on {len(COMBINE_CASES)} pairs, empty parts and large maxima included")


# ================================================================== worked reductions (not graded)

def measure_reductions(kernels: dict[str, Callable], n: int = 1 << 26):
    """Time whole-array sums `fn(x, out)` (x fp32 of n elements, out one fp32, zeroed by the caller's
    launcher where it accumulates with atomics) against torch.sum; check each against float64 first.
    Prints GB/s and returns {name: GB/s}, torch's included (GPU only)."""
    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here. The ranges recorded on an H200 are in the text.")
        return None
    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    x = torch.randn(n, generator=gen, device="cuda")
    want = x.double().sum().item()
    out = torch.empty(1, device="cuda")
    rates = {}
    with captured_stderr():
        for name, fn in kernels.items():
            out.fill_(float("nan"))
            fn(x, out)
            got = out.item()
            if not math.isclose(got, want, rel_tol=1e-3, abs_tol=1.0):
                print(f"{name}: sum {got:.4f}, expected {want:.4f}: not timed")
                continue
            rates[name] = 4 * n / (bench(lambda fn=fn: fn(x, out)) * 1e-3) / 1e9
        rates["torch.sum"] = 4 * n / (bench(lambda: torch.sum(x)) * 1e-3) / 1e9
    for name, gbps in rates.items():
        print(f"  {name:<28} {gbps:>8,.0f} GB/s")
    return rates


# ================================================================== plots

def plot_results(*results: SpeedResult | None):
    """Achieved GB/s of your kernels beside torch's, under the copy ceiling."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 7 on {gpu}")


def plot_softmax_vs_length(softmax, lengths=(256, 1000, 4096, 8192, 16384, 32000, 50257), elements: int = 1 << 27):
    """Your softmax and torch's, GB/s against the row length at a fixed number of elements (GPU only)."""
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    if ungraded_timing_skipped("the sweep"):
        return None
    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    curves = {"yours": [], "torch.softmax": []}
    with captured_stderr():
        for cols in tqdm(lengths, desc="row lengths"):
            rows = max(1, elements // cols)
            (x,) = _softmax_inputs((rows, cols), gen, "cuda")
            out = torch.empty_like(x)
            curves["yours"].append(8 * x.numel() / (bench(lambda x=x, out=out: softmax(x, out)) * 1e-3) / 1e9)
            curves["torch.softmax"].append(8 * x.numel() / (bench(lambda x=x: torch.softmax(x, -1)) * 1e-3) / 1e9)
            del x, out
    print(f"{'row length':>10} {'yours GB/s':>11} {'torch GB/s':>11} {'ratio':>6}")
    for cols, mine, theirs in zip(lengths, curves["yours"], curves["torch.softmax"]):
        print(f"{cols:>10,} {mine:>11,.0f} {theirs:>11,.0f} {mine / theirs:>6.2f}")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for name, gbps in curves.items():
        ax.plot(lengths, gbps, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("row length (fp32 elements), 2^27 elements in all")
    ax.set_ylabel("achieved GB/s (8 bytes an element)")
    ax.legend()
    fig.tight_layout()
    return fig


# ================================================================== cross-architecture builds

def solution_launches(ns: dict, device: str = "meta") -> list[Callable[[], object]]:
    """Calls that reach every Triton kernel the solution notebook defines (`ns`: its cells run), at the
    timing sizes and in both dtypes: grader/notebooks/shipped.py records their launches and compiles
    each for other architectures. Meta tensors: nothing is allocated or run."""
    calls = []
    for dtype in (torch.float16, torch.bfloat16):
        x, res, w = _norm_inputs_meta(NORM_SPEED_SIZE, device, dtype)
        out = torch.empty((2, *NORM_SPEED_SIZE), device=device, dtype=dtype)
        calls.append(lambda x=x, res=res, w=w, out=out: ns["add_rmsnorm"](x, res, w, out[0], out[1]))
    if "groupnorm_silu" in ns:
        g = torch.empty(GROUP_SPEED_SIZE, device=device, dtype=torch.float16)
        c = GROUP_SPEED_SIZE[1]
        wb = torch.empty(c, device=device, dtype=torch.float16)
        calls.append(lambda: ns["groupnorm_silu"](g, wb, wb, torch.empty_like(g)))
    return calls


def _norm_inputs_meta(size: NormSize, device: str, dtype):
    rows, hidden = size
    return (torch.empty(rows, hidden, device=device, dtype=dtype), torch.empty(rows, hidden, device=device, dtype=dtype),
            torch.empty(hidden, device=device, dtype=dtype))


# ------------------------------------------------------------------ diagnose: reading recorded profiles

# Exercise 7.P reads the chapter's own two constraints, one case each, answered in order by one `diagnosis()`:
# (a) occupancy: the softmax with its row held in shared memory (the stretch goal, 125 KiB a block, one block of
#     1,024 threads per SM) beside the solution (two blocks per SM), both recorded on an H200
#     (assets/profiles/H200/7a-occupancy, by assets/results/notebooks/text-facts/run.sh's `diagnose`);
# (b) the extra pass of 7b's unfused rung (an add kernel, then a norm kernel that reads the sum back) beside the
#     fused solution, recorded on an H100 (assets/profiles/H100/7b).
# Checked on a CPU; tests/profiles/test_diagnose.py checks each answer key against the recorded numbers.
OCCUPANCY_KEY = "four float4 loads in flight per thread in the first pass, issued before any of them is merged"
FUSION_KEY = "add the residual inside the norm kernel, where the row is already loaded"
DIAGNOSE = (
    Case(key="7.P (a)", exercise="7a-occupancy", rung="on_chip", beside="solution", binding="occupancy",
         next_rung=OCCUPANCY_KEY,
         choices=("16-byte loads (float4) in both passes over the row", OCCUPANCY_KEY,
                  "pad the shared row against bank conflicts",
                  "blocks of 256 threads, so that more blocks fit on an SM"),
         why="The row held in shared memory (125 KiB a block) leaves room for one block of 1,024 threads per SM: "
             "half the SM's warps, limited by shared memory, where the solution keeps two blocks. Each thread has one "
             "16-byte load in flight at a time, so the SM has half the bytes in flight, and DRAM streams below the "
             "solution's rate although the kernel moves a third fewer bytes. Smaller blocks cannot help (a row still "
             "takes the SM's shared memory) and neither can padding (its float4 accesses are conflict-free: a warp's "
             "16-byte shared load takes four 128-byte wavefronts at best, and the merge's 4-byte loads one, so the "
             "table's 3.4 wavefronts a load are no conflict): each warp must keep more bytes in flight. The same "
             "kernel issuing four loads before it merges any (`on_chip_loads`, recorded with them) keeps its one read "
             "and takes less time.",
         gpu="H200"),
    Case(key="7.P (b)", exercise="7b", rung="unfused", beside="solution", binding="extra-memory-passes",
         next_rung=FUSION_KEY,
         choices=("16-byte loads in both kernels", FUSION_KEY, "more warps per program for rows of 4,096",
                  "replay the two launches as a CUDA graph"),
         why="Each kernel of the unfused rung streams well: its longest, the add, keeps DRAM near its peak. The "
             "launch does not: two kernels move more bytes in all than the fused solution's one, because the add "
             "kernel writes the sum and the norm kernel reads it back, one more pass over the matrix, five against "
             "four. Only putting the add inside the norm kernel removes it: wider loads and more warps change how "
             "fast the bytes move, not how many, and a CUDA graph saves a launch, not a pass."),
)


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
