"""Chapter 3: shared-memory tiling and register blocking (SGEMM).

Exercises
- 3.0  napkin math: the FLOPs of a matrix product, and this GPU's ridge point (CPU-checkable)
- 3.1  prediction: FLOPs per byte loaded from global memory by the naive kernel and by a T x T tiled
       kernel (CPU-checkable)
- 3    `sgemm(a, b, out)`: out = a @ b, fp32, a (M x K) and b (K x N) row-major. Speed bar vs
       `torch.mm` in true fp32, TF32 off (bars.toml "3"); stretch bars "3-stretch" (float4 loads and double
       buffering, `sgemm_v2`) and "3-warptile" (warp tiling, `sgemm_v3`), reported only

Every launcher takes torch tensors on the GPU that the grader allocated, and writes into `out`.
"""

from __future__ import annotations

import torch

from ..cuda.gpu import gpu_or_reason, matmul_precision
from ..errors import NoGPUError, NotImplementedYet
from ..harness import answers, plots
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, require_close
from ..harness.ceilings import ceilings
from ..harness.exercise import (Exercise, SmallSizes, SpeedResult, check_correctness, check_speed, check_stretch,
                                measure_speed)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench

SPEED_SIZE = (4096, 4096, 4096)    # 64 MiB per matrix, 137 GFLOP: a few milliseconds for torch
WORKED_SIZE = (2048, 2048, 2048)   # the worked kernels: the naive one takes ~100x torch's time
UNIT_ROUNDOFF = 2.0 ** -24         # fp32: half the distance from 1.0 to the next float

# Ceilings to draw when there is no GPU: an H100 SXM's, as `ladder doctor` measured them.
EXAMPLE_CEILINGS = {"gpu": "an H100 (example figures, no GPU here)", "fp32_tflops": 51.6, "copy_gbps": 3000.0}


def _mnk(size) -> str:
    m, n, k = size
    return f"M=N=K={m}" if m == n == k else f"M={m}, N={n}, K={k}"


def _matrices(size, gen: torch.Generator, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    m, n, k = size
    return (torch.randn(m, k, generator=gen, device=device, dtype=torch.float32),
            torch.randn(k, n, generator=gen, device=device, dtype=torch.float32))


def _product(size, device: str) -> torch.Tensor:
    m, n, _ = size
    return torch.empty(m, n, device=device, dtype=torch.float32)


def torch_mm_fp32(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The baseline: torch.mm in true fp32. TF32 is pinned off here, not left to the notebook: with
    TF32 on, cuBLAS rounds the inputs to 10 mantissa bits and runs on tensor cores, several times
    faster than any fp32 kernel and not accurate to fp32, so a learner who had turned it on (or a
    library that did) would face an unfair and different bar."""
    with matmul_precision("highest"):
        return torch.mm(a, b, out=out)


def sgemm_tolerance(size) -> tuple[float, float]:
    """(rtol, atol) for an M x N x K fp32 product against the float64 reference.

    Measured on the CPU with randn inputs (tests/chapters/test_ch03.py repeats the experiment at a smaller
    size). Each output sums K products whose rounding errors grow with the running sum, so the error
    grows about linearly with K. Adding the K products one at a time into one fp32 accumulator (the
    order every kernel of the chapter uses, and the worst we tried: torch's CPU matmul, eight
    interleaved partial sums and the reversed order did no worse), the largest error over all 16.7
    million outputs of a 4096^3 product was 1.05e-3 = 4.3 u K (u = 2^-24), and 4.7e-4 beyond
    rtol * |C|; torch.mm's own fp32 result on an H200 was off by at most 1.15e-3. atol = 1e-5 + 10 u K
    is 2.45e-3 at K=4096: twice the largest error, five times the largest beyond rtol * |C|. Rounding
    the inputs to TF32's 10 mantissa bits (or to fp16, the same for randn data) gives errors of 1.9e-2
    rms at K=4096, and 87% of the outputs fall outside this tolerance; at K=1 its relative error, up
    to 1e-3, is a hundred times rtol. So a correct fp32 kernel passes in any summation order, and TF32
    or fp16 fails at every K.
    """
    k = size[2]
    return 1e-5, 1e-5 + 10 * UNIT_ROUNDOFF * k


SGEMM = Exercise(
    key="3", title="SGEMM", where="the code cell under 'Exercise 3'",
    signature="sgemm(a, b, out)", arg_names=("a", "b"),
    make_inputs=_matrices,
    make_output=_product,
    reference=lambda a, b: a @ b,
    baseline=torch_mm_fp32,
    baseline_name="torch.mm fp32",
    dtype=torch.float32,
    # The fewest bytes: A and B read once, C written once.
    bytes_moved=lambda s: 4 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]),
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    ceiling="fp32_tflops",
    tolerance=sgemm_tolerance,
    # Square, non-square with every dimension different, and a K long enough to test the tolerance.
    visible_sizes=((128, 128, 128), (256, 512, 384), (1024, 1024, 1024)),
    speed_size=lambda: SPEED_SIZE,
    describe_size=_mnk,
    speed_hint="give each thread a block of outputs (8 x 8 in a 128 x 128 block tile, or 4 x 4 in a 64 x 64 "
               "one), loop over K in steps of 8 through shared memory, and keep the accumulators in "
               "registers: each value read from shared memory must feed several multiply-adds.",
)

EXERCISES = (SGEMM,)
BAR_KEYS = {"3": "3", "3-stretch": "3", "3-warptile": "3"}
SANITIZE = (
    SmallSizes(SGEMM, "sgemm", ((1, 1, 1), (7, 13, 5), (129, 68, 36), (200, 256, 100))),
    SmallSizes(SGEMM, "sgemm_v2", ((1, 4, 4), (7, 13, 5), (129, 68, 36), (130, 260, 100)), stretch=True),
    SmallSizes(SGEMM, "sgemm_v3", ((1, 4, 4), (7, 13, 5), (129, 68, 36), (130, 260, 100)), stretch=True),
)

# The timing size is square, where a kernel that swaps M and N can still be right: the speed check
# first checks two shapes where it cannot.
SPEED_PRECHECK_SIZES = [(384, 128, 256), (128, 384, 64)]
# The stretch goal's correctness shapes: some with K and N multiples of 4 (the float4 path), some not.
STRETCH_SIZES = [(1, 1, 1), (7, 13, 5), (1, 4, 4), (129, 68, 36), (300, 200, 100), (257, 131, 67),
                 (1000, 1000, 1000), (513, 260, 4096)]


# ------------------------------------------------------------------ what the notebook calls

def check_sgemm(sgemm, sizes=None, trials: int = 2):
    return check_correctness(SGEMM, sgemm, sizes, trials)


def check_sgemm_speed(sgemm) -> SpeedResult:
    check_correctness(SGEMM, sgemm, SPEED_PRECHECK_SIZES, trials=1, verbose=False)
    return check_speed(SGEMM, sgemm, "3")


def measure_sgemm(sgemm, label: str, size=WORKED_SIZE) -> SpeedResult | None:
    """Time a version that is not graded (the worked kernels) against torch.mm fp32 at `size`, print
    one line, and return the result for the plot. Never raises for being slow."""
    try:
        result = measure_speed(SGEMM, sgemm, "3", size=size)
    except NoGPUError as exc:
        print(f"{label}: not measured. {str(exc).splitlines()[0]}")
        return None
    except NotImplementedError:
        print(f"{label}: not written yet, so not measured.")
        return None
    pct = result.pct_of_ceiling()
    print(f"{label:<24} {result.ms:9.3f} ms {result.tflops():7.2f} TFLOP/s"
          + (f" {pct:5.1f}% of the fp32 ceiling" if pct is not None else "")
          + f"   {result.speedup:.3f}x torch.mm fp32 ({result.baseline_ms:.3f} ms), {result.size}")
    return result


def check_sgemm_stretch(sgemm_v2) -> SpeedResult | None:
    return check_stretch(SGEMM, sgemm_v2, "3-stretch", STRETCH_SIZES, "sgemm_v2 and SGEMM_V2_SRC")


def check_sgemm_warptile(sgemm_v3) -> SpeedResult | None:
    """The warp-tiling stretch goal: the same awkward shapes as sgemm_v2's first (a warp-tiled kernel has
    more index arithmetic to get wrong at the edges of C), then its bar, reported only."""
    return check_stretch(SGEMM, sgemm_v3, "3-warptile", STRETCH_SIZES, "sgemm_v3 and SGEMM_V3_SRC")


# The piece of C one warp covers in each rung (rows x columns), for the warp-tiling prediction.
WARP_FOOTPRINTS = {"32 x 32 tile": (1, 32), "register blocking, sgemm_v2": (16, 128), "warp tile 64 x 32": (64, 32),
                   "warp tile 64 x 64": (64, 64)}


def check_warp_reuse(smem_floats_per_fma) -> None:
    """The warp-tiling prediction (not graded): floats a warp reads from shared memory per FMA when it
    covers a rows x cols piece of C, at one step k. Prints each rung's figure; a stub is only reported."""
    names = "`smem_floats_per_fma`"
    try:
        for label, (rows, cols) in (*WARP_FOOTPRINTS.items(), ("", (7, 3)), ("", (128, 1))):
            require_close(call_learner(smem_floats_per_fma, rows, cols, exercise="3.W", names=names),
                          (rows + cols) / (rows * cols),
                          f"smem_floats_per_fma({rows}, {cols}) (hint: at step k the warp needs one float of As for "
                          "each of its rows and one of Bs for each of its columns, and does one FMA per output)")
    except NotImplementedYet as exc:
        print(f"Prediction not written yet: {exc}")
        return
    print("✓ warp-tiling prediction: right. Floats a warp reads from shared memory per FMA, at one step k:")
    for label, (rows, cols) in WARP_FOOTPRINTS.items():
        print(f"  {label:<30} {rows:>3} x {cols:<3} of C: {rows + cols:>3} floats for {rows * cols:>4} FMAs, "
              f"{(rows + cols) / (rows * cols):.3f} per FMA")


def check_napkin_math(gemm_flops, ridge_point) -> None:
    """Exercise 3.0: the FLOPs of an M x N x K product, and the ridge point of a GPU."""
    names = "`gemm_flops` and `ridge_point`"
    for m, n, k in ((4096, 4096, 4096), (1, 1, 1), (7, 13, 5), (300, 200, 100)):
        require_close(call_learner(gemm_flops, m, n, k, exercise="3.0", names=names), 2 * m * n * k,
                      f"gemm_flops({m}, {n}, {k}) (hint: each of the M·N outputs is a sum of K products; "
                      "count a multiply and an add as 2 FLOPs)")
    for tflops, gbps in ((51.6, 3000.0), (1.0, 1.0), (67.0, 4800.0), (20.0, 500.0)):
        require_close(call_learner(ridge_point, tflops, gbps, exercise="3.0", names="`ridge_point`"),
                      tflops * 1e12 / (gbps * 1e9),
                      f"ridge_point({tflops!r}, {gbps!r}) (hint: FLOPs per second divided by bytes per second; "
                      "TFLOP/s is 1e12 FLOP/s, GB/s is 1e9 bytes/s)")
    print("✓ 3.0 napkin math: right. Below the ridge point a kernel waits for memory; above it, for arithmetic.")


def check_intensity(naive_intensity, tiled_intensity) -> None:
    """Exercise 3.1: FLOPs per byte loaded from global memory, naive and T x T tiled."""
    names = "`naive_intensity` and `tiled_intensity`"
    for m, n, k in ((4096, 4096, 4096), (64, 128, 32), (1, 1, 1), (300, 200, 100)):
        require_close(call_learner(naive_intensity, m, n, k, exercise="3.1", names=names), 0.25,
                      f"naive_intensity({m}, {n}, {k}) (hint: each thread's loop does one multiply-add, "
                      "2 FLOPs, per float of A and float of B it loads: how many bytes is that?)")
    for m, n, k, t in ((4096, 4096, 4096, 32), (256, 512, 64, 16), (128, 128, 128, 128), (96, 64, 10, 32),
                       (4096, 4096, 4096, 128)):
        require_close(call_learner(tiled_intensity, m, n, k, t, exercise="3.1", names="`tiled_intensity`"),
                      t / 4,
                      f"tiled_intensity({m}, {n}, {k}, {t}) (hint: there are (M/T)·(N/T) blocks, and each loads "
                      "a T x K strip of A and a K x T strip of B once; divide all the FLOPs by all those bytes)")
    print("✓ 3.1 arithmetic intensity: right. The naive kernel does 0.25 FLOP per byte it loads; a T x T tile "
          "does T/4, so every doubling of the tile doubles it.")


# ------------------------------------------------------------------------- the roofline

def _ceiling_numbers() -> tuple[str, float, float]:
    ok, _ = gpu_or_reason()
    if not ok:
        e = EXAMPLE_CEILINGS
        return e["gpu"], e["fp32_tflops"], e["copy_gbps"]
    with captured_stderr():
        c = ceilings()
    return c.gpu, c.fp32_tflops, c.copy_gbps


def _print_roofline(gpu, tflops, gbps, ridge, kernels, perfect) -> None:
    print(f"{gpu}: fp32 ceiling {tflops:.1f} TFLOP/s, copy ceiling {gbps:,.0f} GB/s, "
          f"ridge point {ridge:.1f} FLOP/byte")
    for name, intensity in kernels.items():
        bound = min(tflops, intensity * gbps / 1e3)
        side = "below" if intensity < ridge else "above"
        print(f"  {name:<16} {intensity:7.2f} FLOP/byte, {side} the ridge: at most {bound:6.1f} TFLOP/s "
              "if every load came from HBM")
    print(f"  {'each matrix once':<16} {perfect:7.1f} FLOP/byte (A and B read once, C written once: the most "
          "reuse there is)")


def plot_roofline(naive_intensity, tiled_intensity, results: dict[str, SpeedResult | None] | None = None,
                  size=SPEED_SIZE, verbose: bool = True):
    """This GPU's roofline (the copy ceiling's slope, the fp32 ceiling's flat roof) with each kernel
    placed at the intensity your functions give it; measured results, if given, as points."""
    import matplotlib.pyplot as plt

    gpu, tflops, gbps = _ceiling_numbers()
    ridge = tflops * 1e12 / (gbps * 1e9)
    m, n, k = size
    try:
        kernels = {"naive": naive_intensity(m, n, k), "32 x 32 tile": tiled_intensity(m, n, k, 32),
                   "64 x 64 block": tiled_intensity(m, n, k, 64), "128 x 128 block": tiled_intensity(m, n, k, 128)}
    except NotImplementedError:
        print("Write naive_intensity and tiled_intensity (exercise 3.1) to place the kernels on the roofline.")
        kernels = {}
    perfect = 2 * m * n * k / (4 * (m * k + k * n + m * n))
    if verbose:
        _print_roofline(gpu, tflops, gbps, ridge, kernels, perfect)

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    low, high = 0.02, tflops * 4
    xs = [0.05, ridge, 2000.0]
    ax.plot(xs, [min(tflops, x * gbps / 1e3) for x in xs], color="black", linewidth=1.5)
    ax.text(0.06, 0.06 * gbps / 1e3 * 1.3, f"copy ceiling {gbps:,.0f} GB/s", fontsize=8, ha="left", va="bottom")
    ax.text(1800.0, tflops * 1.1, f"fp32 ceiling {tflops:.1f} TFLOP/s", fontsize=8, ha="right", va="bottom")
    ax.axvline(ridge, color="gray", linestyle=":", linewidth=1)
    ax.text(ridge * 0.93, high * 0.8, f"ridge {ridge:.1f}", fontsize=8, color="gray", va="top", ha="right")
    colors = {"naive": "tab:red", "32 x 32 tile": "tab:orange", "64 x 64 block": "tab:olive",
              "128 x 128 block": "tab:green"}
    marks = [(name, x, colors[name]) for name, x in kernels.items()] + [("each matrix once", perfect, "tab:blue")]
    for name, x, color in marks:
        ax.axvline(x, color=color, linewidth=1, alpha=0.6)
        ax.text(x * 1.07, low * 1.5, name, rotation=90, fontsize=8, color=color, va="bottom", ha="left")
    for label, r in (results or {}).items():
        if r is None or label not in kernels:
            continue
        x = kernels[label]
        ax.plot([x], [r.tflops()], marker="o", color=colors.get(label, "tab:purple"))
        ax.text(x * 1.12, r.tflops(), f"{r.tflops():.1f} measured", fontsize=8, va="center")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.05, 2000.0)
    ax.set_ylim(low, high)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte loaded from global memory)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Roofline of {gpu}")
    fig.tight_layout()
    return fig


# -------------------------------------------------------------------- precision, shown

def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to TF32's 10 explicit mantissa bits (to nearest, ties to even), as fp32.
    How TF32 tensor cores see their inputs; lets a CPU show what TF32 does to a matmul."""
    bits = x.contiguous().view(torch.int32).to(torch.int64)
    lsb = (bits >> 13) & 1
    bits = ((bits + 0xFFF + lsb) >> 13) << 13
    return bits.to(torch.int32).view(torch.float32).reshape(x.shape)


def show_precision(k: int = 4096) -> dict[str, float]:
    """The same product three ways, against float64: fp32, TF32, fp16. Prints the errors and how many
    outputs each leaves outside the exercise's tolerance; on a GPU also the time each takes."""
    ok, _ = gpu_or_reason()
    dev = "cuda" if ok else "cpu"
    m = n = 4096 if ok else 256  # a CPU shows the same errors at a smaller M and N: the error depends on K
    gen = torch.Generator(device=dev).manual_seed(torch.seed())
    a, b = _matrices((m, n, k), gen, dev)
    ref = a.double() @ b.double()
    rtol, atol = sgemm_tolerance((m, n, k))
    if ok:
        ah, bh = a.half(), b.half()
        versions = [("fp32 (TF32 off)", "highest", lambda: a @ b),
                    ("TF32 (tensor cores)", "high", lambda: a @ b),
                    ("fp16 (tensor cores)", "highest", lambda: ah @ bh)]
    else:
        ta, tb = round_to_tf32(a).double(), round_to_tf32(b).double()
        ha, hb = a.half().double(), b.half().double()
        versions = [("fp32", "highest", lambda: a @ b),
                    ("TF32 (emulated)", "highest", lambda: ta @ tb),
                    ("fp16 inputs (emulated)", "highest", lambda: ha @ hb)]
    print(f"C = A @ B, {_mnk((m, n, k))}, randn inputs, compared with float64. The exercise's tolerance at "
          f"this K: |error| <= {atol:.2g} + {rtol:g}·|C|")
    print(f"{'':<24}{'max |error|':>12}{'outside tolerance':>20}" + (f"{'time':>11}" if ok else ""))
    errors = {}
    with captured_stderr():
        for name, precision, run in versions:
            with matmul_precision(precision):
                out = run()
                ms = bench(run) if ok else None
            err = (out.double() - ref).abs()
            outside = (err > atol + rtol * ref.abs()).double().mean().item()
            errors[name] = err.max().item()
            print(f"{name:<24}{errors[name]:>12.2e}{100 * outside:>19.1f}%" + (f"{ms:>8.2f} ms" if ok else ""))
    return errors


# -------------------------------------------------------------------------------- plots

def plot_results(results: dict[str, SpeedResult | None]):
    """One bar per version of your SGEMM (TFLOP/s) beside torch.mm fp32 at the same size, under this
    GPU's fp32 ceiling; each bar says its speedup over torch."""
    shown = [r for r in results.values() if r is not None]
    return plots.plot_results(results, title=f"SGEMM on {shown[-1].gpu}" if shown else "")


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="3.P", exercise="3", rung="naive_uncoalesced", beside="naive_coalesced", binding="uncoalesced",
    next_rung="swap the mapping, so that threadIdx.x walks along a row of C",
    choices=("more blocks: raise the occupancy", "swap the mapping, so that threadIdx.x walks along a row of C",
             "tensor cores", "unroll the K loop"),
    why="A profile that misleads: 99% occupancy and 1% DRAM look like a compute-bound kernel, but the loads "
        "take 16.5 sectors per request and the top stall is lg throttle, a queue of memory instructions. "
        "With threadIdx.x along a row the same kernel ran 12x faster.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
