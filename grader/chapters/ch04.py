"""Chapter 4: tensor cores through WMMA.

Exercises
- 4.0  napkin math: the FLOPs of a GEMM and the time floor at this GPU's fp16 ceiling (CPU-checkable)
- 4.1  napkin math: FLOPs per byte loaded for a block tile, and the bytes a tiled GEMM loads
       (CPU-checkable)
- 4    `wmma_gemm(a, b, out)`: out = a @ b with a (M x K) and b (K x N) fp16, out (M x N) fp32, on
       tensor cores, staged through shared memory. Four graded cells: the kernel's instructions
       include tensor-core MMAs (checked by compiling it through NVRTC, so it runs on a CPU too),
       visible shapes, hidden shapes, and the speed bar vs `torch.mm` in fp16 (bars.toml "4"),
       which also requires the tensor-core instructions. Stretch bar "4-stretch", reported only.
- 4c   `gemm_mma(a, b, out)` (optional points, compute capability 8.0+): the same product and contract
       as 4, written with PTX `mma.sync.aligned.m16n8k16`, `ldmatrix`, an XOR-swizzled shared-memory
       layout and a cp.async pipeline of 3 or more stages. Two graded cells, visible and hidden shapes;
       the speed cell requires the tensor-core instructions (4's requirement, reused) and reports
       the ratio to `torch.mm` fp16 against bars.toml "4c-stretch", a target no bar could be calibrated for
       (the H100 figures are in its calibration string).

Every launcher takes torch tensors on the GPU that the grader allocated, and writes into `out`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..cuda import sass
from ..cuda.gpu import gpu_info, gpu_or_reason
from ..cuda.kernels import load_kernel
from ..errors import CheckFailed
from ..calls.rules import unchecked
from ..harness import answers, plots
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, check_floor_ms, check_gemm_flops, require_close
from ..harness.exercise import (Exercise, Requirement, SmallSizes, SpeedResult, as_learner, check_correctness,
                                check_speed, check_stretch, counted_launch, launch, measure_version)
from ..harness.quiet import captured_stderr

SPEED_SIZE = (4096, 4096, 4096)


def _mnk(size) -> str:
    m, n, k = size
    return f"M={m}, N={n}, K={k}"


def _half(rows: int, cols: int, gen: torch.Generator, device: str) -> torch.Tensor:
    # Drawn in fp32 and rounded: the float64 reference then sees exactly the fp16 values the kernel sees.
    return torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32).half()


def _tolerance(size) -> tuple[float, float]:
    """(rtol, atol) for an M x N x K product of fp16 inputs, accumulated in fp32.

    Products of two fp16 numbers are exact in fp32, so all the error is in the K-long sums. We
    measured it on the CPU with randn inputs (tests/chapters/test_ch04.py repeats the experiment): summing in
    fp32, sixteen products at a time as the tensor cores do, the largest error over a 64 x 64 output
    is 1.6e-4 at K=4096 with round-to-nearest and 1.4e-3 with round-toward-zero (some tensor cores
    truncate); it grows about linearly with K. Summing in fp16 instead gives errors of 1.2 at K=4096
    (0.09 at K=256), and rounding an fp32 result to fp16 gives up to 0.06 (|C| reaches 256 there).
    atol = 4e-6 * K is 0.016 at K=4096: ten times the worst fp32 error we saw, and far below both fp16
    errors, which therefore fail at every K above a handful.
    """
    return 1e-5, 4e-6 * size[2] + 1e-5


@dataclass(frozen=True)
class TensorCoreWork(Requirement):
    """Before any speed is measured: every kernel the launcher launches has tensor-core instructions,
    and on a GPU, launched for real at `count_size`, its tensor cores do every multiply-add of the
    product (`check_tensor_cores`)."""
    count_size: tuple = (768, 768, 768)
    when = "before-speed"

    def check(self, ex, fn, label: str) -> None:
        check_tensor_cores(fn, what=label, verbose=False)


# The shape at which a GPU counts the multiply-adds the tensor cores execute: a multiple of 16, 32, 48,
# 64, 96, 128, 192, 256 and 384, so that no block tile a GEMM is likely to use leaves edge tiles that
# might excuse work done on the FMA units.
TENSOR_CORES = TensorCoreWork(count_size=(768, 768, 768))

WMMA_GEMM = Exercise(
    key="4", title="WMMA GEMM", where="the code cell under 'Exercise 4'",
    signature="wmma_gemm(a, b, out)", arg_names=("a", "b"),
    make_inputs=lambda s, gen, dev: (_half(s[0], s[2], gen, dev), _half(s[2], s[1], gen, dev)),
    make_output=lambda s, dev: torch.empty(s[0], s[1], device=dev, dtype=torch.float32),
    reference=lambda a, b: a @ b,
    # torch writes fp16, we write fp32: torch moves 2 bytes less per output element, a small
    # head start at 4096^3 (the time goes into the 137 GFLOP, not the 64 MB written).
    baseline=lambda a, b, out: torch.mm(a, b),
    baseline_name="torch.mm fp16",
    dtype=torch.float32,
    bytes_moved=lambda s: 2 * (s[0] * s[2] + s[2] * s[1]) + 4 * s[0] * s[1],
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    ceiling="fp16_tflops",
    tolerance=_tolerance,
    # Square, not a multiple of anything but 8, and a long K that an fp16 accumulator cannot survive.
    visible_sizes=((256, 256, 256), (200, 312, 100), (128, 192, 4096)),
    speed_size=lambda: SPEED_SIZE,
    describe_size=_mnk,
    speed_hint="stage tiles of A and B through shared memory (a 128 x 128 block tile, 32 deep, with 8 "
               "warps that each own 4 x 2 accumulator fragments), so that each fragment loaded from "
               "shared memory feeds several MMAs.",
    requirements=(TENSOR_CORES,),
)

# Exercise 4c: exercise 4's product, inputs, reference, tolerance, shapes and tensor-core requirement,
# under its own key and bar.
MMA_GEMM = replace(
    WMMA_GEMM, key="4c", title="mma.sync GEMM", where="the code cell under 'Exercise 4c'",
    signature="gemm_mma(a, b, out)",
    speed_hint="keep the tensor cores fed: ldmatrix from a swizzled (conflict-free) shared-memory layout, "
               "3 or 4 cp.async stages in flight in dynamic shared memory (more than 48 KiB: pass shared_mem), "
               "a 128 x 256 block tile with 8 warps of 64 x 64 (4 x 8 m16n8k16 MMAs per 16-deep step), and the "
               "next step's fragments loaded while the current step's MMAs run.",
)

EXERCISES = (WMMA_GEMM, MMA_GEMM)
BAR_KEYS = {"4": "4", "4-stretch": "4", "4c-stretch": "4c"}
SANITIZE = (
    SmallSizes(WMMA_GEMM, "wmma_gemm", ((1, 1, 1), (17, 33, 9), (129, 257, 95), (128, 256, 64), (136, 264, 40))),
    SmallSizes(WMMA_GEMM, "wmma_gemm_async", ((1, 1, 1), (17, 33, 9), (129, 257, 96), (136, 264, 40)), stretch=True),
    SmallSizes(MMA_GEMM, "gemm_mma", ((1, 1, 1), (17, 33, 9), (129, 257, 95), (136, 264, 40)), stretch=True),
)

HIDDEN_SIZES = [(1, 1, 1), (16, 16, 16), (17, 33, 9), (129, 257, 95), (1000, 1500, 700), (513, 130, 4096),
                (64, 4100, 48), (2048, 520, 264)]
STRETCH_SIZES = [(1, 1, 1), (17, 33, 9), (200, 312, 100), (129, 257, 96), (384, 640, 4096)]
# Shapes at which the tensor-core check watches the launcher (nothing runs): each path it may take.
_RECORD_SIZES = [SPEED_SIZE, (200, 312, 100), (1, 1, 1)]
COUNT_SIZE = TENSOR_CORES.count_size


# ------------------------------------------------------------------ what the notebook calls

def check_wmma_gemm(wmma_gemm, sizes=None, trials: int = 2):
    return check_correctness(WMMA_GEMM, wmma_gemm, sizes, trials)


def check_tensor_cores(wmma_gemm, *, what: str = "4", verbose: bool = True) -> list[sass.Listing]:
    """Every kernel `wmma_gemm` launches must contain tensor-core instructions.

    The launcher is called at a few shapes with kernel launches recorded instead of run, so this
    works without a GPU; each recorded kernel is compiled through NVRTC for this GPU (sm_80 without
    one) and its SASS inspected, or its PTX when there is no disassembler.
    """
    wmma_gemm = as_learner(wmma_gemm)
    with captured_stderr():
        kernels = _kernels_launched_by(wmma_gemm)
        listings = [sass.disassemble(k) for k in kernels]
    if not listings:
        raise CheckFailed(f"{what} tensor cores: wmma_gemm returned without launching a kernel made with "
                          "load_kernel, so there is nothing to inspect. Launch your WMMA kernel through the "
                          "object load_kernel returned (wmma_gemm_kernel(grid, block, args)).",
                          reason="no-tensor-cores")
    lacking = [l for l in listings if not l.tensor_core_instructions()]
    if lacking:
        lines = [f"{what} tensor cores: "
                 + ("the kernel" if len(listings) == 1 else f"{len(lacking)} of the {len(listings)} kernels")
                 + " that wmma_gemm launches " + ("has" if len(listings) == 1 else "have")
                 + " no tensor-core instructions:"]
        for l in lacking:
            lines.append(f"  `{l.name}` {_describe(l)}")
        lines.append("Without tensor-core instructions the multiply-adds run on the ordinary FMA units, which do "
                     "about a sixteenth as many per clock on an A100 or an H100. Every kernel that wmma_gemm launches must multiply with WMMA: #include <mma.h>, "
                     "then wmma::fragment, wmma::load_matrix_sync, wmma::mma_sync and wmma::store_matrix_sync. "
                     "Do any other work (zero-filling, edges) inside that kernel.")
        raise CheckFailed("\n".join(lines), reason="no-tensor-cores")
    _require_executed(wmma_gemm, listings, what)
    if verbose:
        for l in listings:
            print(f"✓ {what} tensor cores: `{l.name}` {_describe(l)}")
    return listings


def check_wmma_gemm_speed(wmma_gemm) -> SpeedResult:
    """Tensor-core work first (the exercise's requirement), then the speed bar."""
    return check_speed(WMMA_GEMM, wmma_gemm, "4")


def measure_wmma_gemm(fn, label: str = "one warp per tile") -> SpeedResult | None:
    """Time a WMMA launcher against torch.mm at 4096^3 and print the report (not graded)."""
    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    return measure_version(WMMA_GEMM, fn, label, "4")


def check_wmma_gemm_stretch(wmma_gemm_async) -> SpeedResult | None:
    """The stretch goal: correct on awkward shapes, tensor cores, then the speed bar (reported only)."""
    info = gpu_info()
    if info is not None and info.capability < (8, 0):
        print(f"Stretch goal skipped: cp.async needs compute capability 8.0 or newer; {info.name} is {info.cc}.")
        return None
    result = check_stretch(WMMA_GEMM, wmma_gemm_async, "4-stretch", STRETCH_SIZES,
                           "wmma_gemm_async and WMMA_GEMM_ASYNC_SRC")
    if result is not None:
        print(f"  = {100 * result.speedup:.0f}% of cuBLAS (what torch.mm runs) on this GPU")
    return result


def check_gemm_mma(gemm_mma, sizes=None, trials: int = 2):
    """Exercise 4c, correctness: exercise 4's shapes (or `sizes`), inputs, reference and tolerance."""
    return check_correctness(MMA_GEMM, gemm_mma, sizes, trials)


def check_gemm_mma_speed(gemm_mma) -> SpeedResult | None:
    """Exercise 4c, speed, reported only: like every ungraded cell (check_stretch), a kernel not written
    yet or no GPU is printed, not raised; then tensor-core work (4's requirement) and bar "4c-stretch"."""
    result = check_stretch(MMA_GEMM, gemm_mma, "4c-stretch", MMA_GEMM.visible_sizes, "gemm_mma and GEMM_MMA_SRC")
    if result is not None:
        print(f"  = {100 * result.speedup:.0f}% of cuBLAS (what torch.mm runs) on this GPU")
    return result


def check_napkin_math(gemm_flops, floor_ms) -> None:
    """Exercise 4.0: the FLOPs of an M x N x K GEMM, and the least time they take at a throughput."""
    check_gemm_flops(gemm_flops, "4.0", "`gemm_flops` and `floor_ms`")
    check_floor_ms(floor_ms, "4.0")
    print("✓ 4.0 napkin math: GEMM FLOPs and time floor are right")


def check_intensity(flops_per_byte, global_bytes) -> None:
    """Exercise 4.1: FLOPs per byte a block tile loads, and all the bytes a tiled GEMM loads."""
    names = "`flops_per_byte` and `global_bytes`"
    for tm, tn in ((16, 16), (128, 128), (128, 64), (64, 256), (1, 1)):
        require_close(call_learner(flops_per_byte, tm, tn, exercise="4.1", names=names), tm * tn / (tm + tn),
                      f"flops_per_byte({tm}, {tn}) (hint: for one step of depth k, the tile does 2*{tm}*{tn}*k "
                      f"FLOPs and loads {tm}*k halves of A and k*{tn} halves of B, 2 bytes each; k cancels)")
    for m, n, k, tm, tn in ((4096, 4096, 4096, 16, 16), (4096, 4096, 4096, 128, 128), (256, 512, 64, 128, 64),
                            (16, 16, 16, 16, 16)):
        want = 2 * (m * k * (n // tn) + k * n * (m // tm))
        require_close(call_learner(global_bytes, m, n, k, tm, tn, exercise="4.1", names="`global_bytes`"), want,
                      f"global_bytes({m}, {n}, {k}, {tm}, {tn}) (hint: every block in a row of blocks reads the "
                      f"same {tm} rows of A, all K columns; there are N/{tn} blocks in a row. Likewise for B)")
    print("✓ 4.1 napkin math: a 128 x 128 tile does "
          f"{128 * 128 / 256:.0f} FLOPs per byte loaded, 8x more than one warp's 16 x 16 tile")


# ------------------------------------------------------------------------------------ plots

def plot_results(results: dict[str, SpeedResult | None]):
    """Bar chart of TFLOP/s: each of your versions by name, torch.mm fp16, under the fp16 ceiling.
    Results that are None are left out."""
    shown = [r for r in results.values() if r is not None]
    return plots.plot_results(results, title=f"Chapter 4, {_mnk(SPEED_SIZE)}, on {shown[-1].gpu}" if shown else "")


# ------------------------------------------------------------------------------------ helpers

def _kernels_launched_by(fn) -> list:
    """The CudaKernels `fn` launches at a few shapes; launches are recorded, never run (wherever the
    launcher runs, the kernels' sources come back, and are built again here)."""
    device = "cuda" if gpu_or_reason()[0] else "cpu"
    kernels, seen, refused = [], set(), None
    for m, n, k in _RECORD_SIZES:
        a = torch.empty(m, k, device=device, dtype=torch.float16)
        b = torch.empty(k, n, device=device, dtype=torch.float16)
        out = torch.empty(m, n, device=device, dtype=torch.float32)
        try:
            launched = launch(WMMA_GEMM, fn, (a, b), out, record=True)
        except CheckFailed as exc:
            # A launcher that refuses a shape is for the correctness cells to judge; this check
            # only needs the kernels of the shapes it accepts.
            refused = refused or exc
            continue
        for kernel in launched:
            if (kernel.name, kernel.source) not in seen:
                seen.add((kernel.name, kernel.source))
                kernels.append(load_kernel(kernel.source, kernel.name, kernel.options, kernel.where))
    if not kernels and refused is not None:
        raise refused
    return kernels


def _require_executed(fn, listings: list, what: str) -> None:
    """On a GPU: launched for real, the tensor cores must do every multiply-add of the product.

    The launcher runs once at COUNT_SIZE on fresh random inputs, with each of its kernels replaced by
    an instrumented copy that counts the multiply-adds its tensor-core MMAs perform (grader.cuda.tccount);
    the result is checked as in every correctness trial. A tensor-core MMA compiled into a branch
    that never runs is in the SASS, but counts nothing here.
    """
    if not gpu_or_reason()[0]:
        return
    tally, ran = counted_launch(WMMA_GEMM, fn, COUNT_SIZE, f"{what} tensor cores, {_mnk(COUNT_SIZE)}, instrumented run")
    _judge_count(tally, set(ran), listings, what)


def _judge_count(counted, ran: set, listings: list, what: str) -> None:
    """The verdict on an instrumented run at COUNT_SIZE: `counted` is a grader.cuda.tccount Tally,
    `ran` the names of the kernels launched, `listings` the inspected kernels."""
    m, n, k = COUNT_SIZE
    with_tc = {l.name for l in listings if l.tensor_core_instructions()}
    other = sorted(ran - with_tc)
    if other:
        raise CheckFailed(f"{what} tensor cores: a real launch of wmma_gemm ran {', '.join(f'`{k}`' for k in other)}, "
                          "which was not among the inspected kernels with tensor-core instructions.",
                          reason="no-tensor-cores")
    macs, need = counted.total, m * n * k
    if macs >= need:
        return
    if counted.uncounted:
        why = "; ".join(f"`{name}`: {reason}" for name, reason in counted.uncounted.items())
        unchecked(f"{what} tensor cores", "counting the multiply-adds your tensor cores execute", why)
        return
    done = ", ".join(f"`{name}` {v:,}" for name, v in counted.macs.items()) or "none"
    unweighed = sorted({op for ops in counted.unweighed.values() for op in ops})
    extra = (f" Only wmma, mma.sync and wgmma instructions can be counted; yours include {', '.join(unweighed)}, "
             "which count nothing here." if unweighed else "")
    raise CheckFailed(
        f"{what} tensor cores: your kernel has tensor-core instructions, but at {_mnk(COUNT_SIZE)} the ones it "
        f"executed did {macs:,} multiply-adds ({100 * macs / need:.0f}% of the {need:,} the product needs; "
        f"by kernel: {done}). The result was right, so the rest was computed another way, on the FMA units. "
        "Every multiply-add must go through wmma::mma_sync: an MMA in a branch that never runs, or one used "
        "for a part of the tiles only, does not count. (Counted by running a copy of your kernel with a "
        "counter added before each tensor-core instruction.)" + extra, reason="no-tensor-cores")


def _describe(listing: sass.Listing) -> str:
    """What the listing holds, on one line, and how it was made, on the next."""
    tc = listing.tensor_core_instructions()
    how = f"\n      ({listing.note})"
    if tc:
        found = ", ".join(f"{op} x{n}" for op, n in tc.most_common())
        return f"has {sum(tc.values())} tensor-core instructions in its {listing.level} for {listing.arch}: {found}" + how
    fma_name = "FFMA" if listing.level == "SASS" else "fma.rn.f32"
    return (f"has no tensor-core instructions in its {listing.level} for {listing.arch}, and "
            f"{listing.count(fma_name)} {fma_name}" + how)


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="4.P", exercise="4", rung="global_wmma", beside="fma_only", binding="cache-traffic-per-flop",
    next_rung="stage the tiles in shared memory, each loaded once per block and read by every warp",
    choices=("stage the tiles in shared memory, each loaded once per block and read by every warp",
             "accumulate in fp16", "fewer registers per thread, for more occupancy", "back to FMA units"),
    why="The tensor cores do run (4%, against 0% for the FMA kernel beside it), but each warp loads its "
        "fragments from global memory for every step of K: DRAM at 3% and L2 hits at 95% say the same bytes "
        "are fetched again and again, and warps wait on them (long scoreboard). Staged in shared memory, the "
        "solution reached 33% tensor-pipe use and ran 7.7x faster.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
