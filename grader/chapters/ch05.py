"""Chapter 5: Triton matmul.

Exercises
- 5.0  napkin math: FLOPs of a matmul, the time floor at a FLOP rate, and the bytes a grid of tiles
       loads (CPU-checkable)
- 5.1  the grouped launch order, in Python: program id -> output tile (CPU-checkable)
- 5a   `matmul(a, b, out)`: out = a @ b, fp16 in, fp32 accumulation, fp16 out. Speed bar vs
       `torch.mm` at 4096^3 (bars.toml "5a"); stretch "5a-stretch": split-K at a skinny shape,
       reported, never graded; the Hopper rung "5a-hopper": a persistent matmul that moves tiles with
       TMA (tensor descriptors), timed at 4096^3 and 8192^3, reported, never graded, and only on GPUs
       with TMA (compute capability 9.0 and later)
- 5b   `matmul_bias_act(a, b, bias, out)`: out = gelu(a @ b + bias) with the tanh form of GELU,
       fp16, in one kernel. Speed bar vs torch eager (matmul, then bias, then GELU); torch.compile
       is reported for comparison, never graded

Launchers take torch tensors the grader allocated and write into `out`. On a GPU they are CUDA
tensors; without one, Triton runs the kernels on the CPU through its interpreter
(`TRITON_INTERPRET=1`, set by `start()`), so the same launchers get CPU tensors and small sizes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

import torch

from ..harness import answers, plots
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, check_floor_ms, check_gemm_flops, require_close
from ..cuda import archs
from ..cuda.crosscompile import pipeline_buffers
from ..cuda.gpu import arch_here, gpu_info, gpu_or_reason, has_gpu
from ..errors import CheckFailed
from ..harness.exercise import (Exercise, SmallSizes, SpeedResult, as_learner, check_correctness, check_speed,
                                check_stretch, measure_speed, measure_version, stretch_left_out,
                                ungraded_timing_skipped)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench

Size = tuple[int, int, int]   # (M, N, K): a is M x K, b is K x N, out is M x N

SPEED_SIZE_5A: Size = (4096, 4096, 4096)
# 5b is timed where the epilogue is a real share of torch eager's time: a large output (M*N) and a
# short reduction (K): eager's bias and GELU passes move 8*M*N bytes against 2*M*N*K FLOPs. At 4096^3
# a fused kernel measured only 1.09x eager on an H200 (the bar would be a coin toss); at
# 8192 x 8192 x 1024, 1.48x, while the unfused version stays at 0.88x (see the notebook).
SPEED_SIZE_5B: Size = (8192, 8192, 1024)
# The stretch goal's skinny shape: a 512 x 512 output is only 16 tiles of 128 x 128, far fewer than
# the SMs of any data-centre GPU, while K is long enough to keep every SM busy if it were split.
SPEED_SIZE_SPLIT_K: Size = (512, 512, 65536)

# The Hopper rung is timed at two sizes, and its bar must hold at both: at 4096^3 one wave of a
# persistent kernel is a few tiles per SM, at 8192^3 it is dozens, so the two test different things.
SPEED_SIZES_HOPPER: tuple[Size, ...] = ((4096, 4096, 4096), (8192, 8192, 8192))

# The Triton interpreter runs every block operation through NumPy: a few milliseconds per program
# and K step, whatever part of a block is masked off. So its cost follows the sizes rounded up to
# whole blocks: 1 x 3000 x 1000 is as slow as 64 x 3008 x 1024 (about 10 s a trial on a CPU), while
# 127 x 129 x 257 takes a fraction of a second. Above this much rounded work a size is skipped on a
# CPU, with a note.
CPU_BLOCK = 64
CPU_MAX_WORK = 1 << 24


def interpreter_work(size: Size) -> int:
    """M x N x K with each rounded up to a whole CPU_BLOCK: what the interpreter's time follows."""
    return math.prod(-(-n // CPU_BLOCK) * CPU_BLOCK for n in size)


def _describe(size: Size) -> str:
    m, n, k = size
    return f"M={m:,} N={n:,} K={k:,}"


def _inputs(size: Size, gen: torch.Generator, device: str, bias: bool = False):
    """a scaled by 1/sqrt(K): every output is O(1) whatever K is (see `_tolerance`)."""
    m, n, k = size
    a = (torch.randn(m, k, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)).to(torch.float16)
    b = torch.randn(k, n, generator=gen, device=device, dtype=torch.float16)
    if not bias:
        return a, b
    return a, b, torch.randn(n, generator=gen, device=device, dtype=torch.float16)


def _output(size: Size, device: str) -> torch.Tensor:
    m, n, _ = size
    return torch.empty(m, n, device=device, dtype=torch.float16)


def _tolerance(size: Size) -> tuple[float, float]:
    """(rtol, atol) against the float64 reference, the same for every size, and why.

    The inputs are fp16 and the reference uses exactly those values, so a correct kernel's error is
    fp32 accumulation (about 1e-7 relative: nothing) plus one rounding of the result to fp16, at most
    half an fp16 step: 2^-11 ~ 4.9e-4 of the value. rtol = 2e-3 leaves 4x room for that. Because A is
    scaled by 1/sqrt(K), outputs are O(1) for every K, so one atol serves every size: 1e-3, which
    also covers the erf form of GELU (within 4.7e-4 of the tanh form) in 5b.
    What it rejects (simulated at 512 x 512, see tests/chapters/test_ch05.py): accumulating in fp16 fails from
    K = 1024 on (at K = 4096, 3-20% of the elements are out), and bf16 inputs fail at every K
    (a third of the elements). The timing sizes have K >= 1024, so the speed cell's own
    correctness check catches both.
    5b's answer may also be as far off as torch eager's own (`_eager_bias_gelu`, Exercise.as_torch_computes):
    eager rounds the product to fp16 before adding the bias, and where the bias nearly cancels a product
    of 4 to 8 that one rounding (up to 2^-9) exceeds the tolerance at the small result. It happened once
    in 67 million elements at 8192 x 8192 (an H200, a class graded in assets/results/class-grading): without the allowance a kernel
    that rounds where eager does would fail on some draws of the inputs and pass on others.
    """
    return 2e-3, 1e-3


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def _eager_bias_gelu(a, b, bias, out):
    # What a torch user writes: three kernels, each a trip through HBM for the M x N result.
    return _gelu_tanh(torch.mm(a, b) + bias)


def _compiled_bias_gelu():
    return torch.compile(lambda a, b, bias: _gelu_tanh(torch.mm(a, b) + bias))


MATMUL = Exercise(
    key="5a", title="fp16 matmul", where="the code cell under 'Exercise 5a'",
    signature="matmul(a, b, out)", arg_names=("a", "b"),
    make_inputs=lambda s, gen, dev: _inputs(s, gen, dev),
    make_output=_output,
    reference=lambda a, b: a @ b,
    baseline=lambda a, b, out: torch.mm(a, b, out=out),
    baseline_name="torch.mm",
    dtype=torch.float16,
    bytes_moved=lambda s: 2 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]),
    visible_sizes=((512, 512, 512), (1024, 768, 256), (384, 640, 1000)),
    speed_size=lambda: SPEED_SIZE_5A,
    describe_size=_describe,
    ceiling="fp16_tflops",
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    tolerance=_tolerance,
    cpu_sizes=((64, 64, 64), (96, 160, 128), (33, 47, 95)),
    speed_hint="large tiles (128 x 128 or more, BLOCK_K 32 to 64), tl.dot on fp16 blocks with an fp32 "
               "accumulator, the grouped launch order, and an autotune list of a few configurations with "
               "num_stages 3 or 4 and num_warps 4 or 8.",
)

FUSED = Exercise(
    key="5b", title="fused matmul + bias + GELU", where="the code cell under 'Exercise 5b'",
    signature="matmul_bias_act(a, b, bias, out)", arg_names=("a", "b", "bias"),
    make_inputs=lambda s, gen, dev: _inputs(s, gen, dev, bias=True),
    make_output=_output,
    reference=lambda a, b, bias: _gelu_tanh(a @ b + bias),
    baseline=_eager_bias_gelu,
    baseline_name="torch eager",
    dtype=torch.float16,
    bytes_moved=lambda s: 2 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1] + s[1]),
    visible_sizes=((512, 512, 512), (1024, 768, 256), (384, 640, 1000)),
    speed_size=lambda: SPEED_SIZE_5B,
    describe_size=_describe,
    ceiling="fp16_tflops",
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    tolerance=_tolerance,
    as_torch_computes=lambda a, b, bias: _gelu_tanh(torch.mm(a, b) + bias),
    others={"torch.compile": _compiled_bias_gelu},
    cpu_sizes=((64, 64, 64), (96, 160, 128), (33, 47, 95)),
    speed_hint="one kernel: your 5a matmul with the bias added to the fp32 accumulator and GELU applied "
               "before the single store, so the M x N result goes to memory once.",
)

# The stretch goal: the same operation, timed at a skinny shape. Not in EXERCISES: it shares 5a's
# key and reference, and its bar ("5a-stretch") is reported, never graded.
SPLIT_K = replace(
    MATMUL, title="fp16 matmul at a skinny shape", where="the code cell of the stretch goal (split-K)",
    signature="matmul_splitk(a, b, out)", speed_size=lambda: SPEED_SIZE_SPLIT_K,
    speed_hint="split K among several programs per output tile, so that there are more programs than SMs.")

# The Hopper rung: the same operation through TMA. A tensor descriptor needs the row stride of every
# matrix to be a multiple of 16 bytes (K and N multiples of 8 in fp16), so its sizes all are.
HOPPER = replace(
    MATMUL, title="persistent TMA matmul", where="the code cell of the stretch goal (Hopper)",
    signature="matmul_tma(a, b, out)", speed_size=lambda: SPEED_SIZES_HOPPER[0],
    cpu_sizes=((64, 64, 64), (40, 24, 136), (130, 264, 72)),
    speed_hint="one program per SM looping over tiles in the grouped order, A and B tiles loaded through "
               "tensor descriptors (TMA), large tiles (128 x 256 x 64) with 3 or 4 stages and 8 warps.")
HOPPER_SIZES = ((1, 8, 8), (40, 24, 136), (130, 264, 72), (512, 512, 512), (1000, 1024, 328), (384, 640, 1000))

EXERCISES = (MATMUL, FUSED)
BAR_KEYS = {"5a": "5a", "5a-stretch": "5a", "5a-hopper": "5a", "5b": "5b"}
# `ladder check --sanitize` runs memcheck only: Triton places shared memory and every barrier itself, so
# racecheck and synccheck would test Triton rather than the learner (ask for them with --tool).
SANITIZER_TOOLS = ("memcheck",)
SANITIZE = (
    SmallSizes(MATMUL, "matmul", ((1, 1, 1), (33, 47, 95), (130, 260, 70))),
    SmallSizes(FUSED, "matmul_bias_act", ((1, 1, 1), (33, 47, 95), (130, 260, 70))),
    SmallSizes(SPLIT_K, "matmul_splitk", ((1, 1, 1), (31, 33, 35), (3, 100, 1500)), stretch=True),
    # K and N multiples of 8: what a TMA descriptor allows (the launcher refuses the rest)
    SmallSizes(HOPPER, "matmul_tma", ((1, 8, 8), (33, 40, 72), (130, 264, 72)), stretch=True),
)


# ------------------------------------------------------------------ configurations that fit this GPU

def shared_memory_bytes(config, arch: archs.Arch) -> int:
    """The shared memory a matmul configuration asks for on `arch`: its pipeline's buffers, each a
    BLOCK_M x BLOCK_K block of A and a BLOCK_K x BLOCK_N block of B, in fp16. (On sm_75, where
    tl.dot runs on FMA units and nothing is pipelined with cp.async, Triton takes less than this.)"""
    kw = config.kwargs
    return pipeline_buffers(config, arch) * (kw["BLOCK_M"] * kw["BLOCK_K"] + kw["BLOCK_K"] * kw["BLOCK_N"]) * 2


def configs_that_fit(configs: list, need: Callable = shared_memory_bytes) -> list:
    """The autotuning configurations whose shared memory (`need(config, arch)`) fits this GPU's limit
    per block.

    Without a GPU (Triton's interpreter: nothing to time) only the first. A configuration that does
    not fit would fail to launch ("out of resources"); leaving it out saves compiling it. If none
    fits, the smallest is kept, so that the launch fails with Triton's own message."""
    arch = arch_here()
    if arch is None:
        return list(configs[:1])
    fits = [c for c in configs if need(c, arch) <= arch.max_shared_per_block]
    return fits or [min(configs, key=lambda c: need(c, arch))]


def tma_shared_memory_bytes(config, arch: archs.Arch | None = None) -> int:
    """The shared memory of a configuration of the Hopper rung on sm_90: `num_stages` buffers of an A
    and a B tile, the staging tile the TMA store copies C from (half the output tile with
    SPLIT_STORE), and an 8-byte barrier per stage (it says when that stage's copies have landed).
    Equal to what Triton 3.6 and 3.9 compile for sm_90 (tests/chapters/test_ch05.py). `arch` is there
    for `configs_that_fit`, which passes one: only sm_90 and later launch this kernel."""
    kw = config.kwargs
    store_n = kw["BLOCK_N"] // 2 if kw.get("SPLIT_STORE") else kw["BLOCK_N"]
    tiles = config.num_stages * (kw["BLOCK_M"] * kw["BLOCK_K"] + kw["BLOCK_K"] * kw["BLOCK_N"]) + kw["BLOCK_M"] * store_n
    return tiles * 2 + 8 * config.num_stages


def tma_configs_that_fit(configs: list) -> list:
    """`configs_that_fit` for the Hopper rung. On a GPU without TMA the rung is never launched (its
    check says so and stops), so the last configuration, the smallest, is kept only so that the kernel
    can be compiled for that GPU (tests/cuda/test_cross_arch.py does, for every architecture)."""
    arch = arch_here()
    if arch is not None and arch.capability < (9, 0):
        # By compute capability, not the TMA probe: this runs when the solution cell is executed, and
        # a probe compile there would cost a second on every GPU for a rung most never launch.
        return list(configs[-1:])
    return configs_that_fit(configs, tma_shared_memory_bytes)


def show_configs(configs: list) -> None:
    """Each configuration's shared memory on this GPU against its limit, and whether it is tried."""
    arch = arch_here()
    if arch is None:
        print("No GPU: the interpreter runs the first configuration only. On a GPU, each configuration's "
              "shared memory is compared with the GPU's limit per block:")
        rows = [(a, None) for a in archs.ARCHS]
    else:
        rows = [(arch, set(map(id, configs_that_fit(configs))))]
    for row_arch, kept in rows:
        print(f"{row_arch.describe()}: {row_arch.max_shared_per_block / 1024:g} KiB per block")
        for c in configs:
            need = shared_memory_bytes(c, row_arch)
            fits = need <= row_arch.max_shared_per_block
            verdict = ("tried" if id(c) in kept else "left out") if kept is not None else ("fits" if fits else "too big")
            print(f"  {_describe_config(c):<44}{need / 1024:6.0f} KiB  {verdict}")


def doctor_notes(arch: archs.Arch, ns: dict) -> list[str]:
    """What `ladder doctor` says of this chapter on `arch`, given the solution notebook's names."""
    configs = ns.get("MATMUL_CONFIGS")
    if not configs:
        return []
    with archs.targeting(arch):
        kept = configs_that_fit(configs)
    left_out = [c for c in configs if c not in kept]
    line = (f"5a, 5b autotuning: {len(kept)} of the solution's {len(configs)} configurations fit "
            f"{arch.max_shared_per_block / 1024:g} KiB per block")
    if left_out:
        line += " (left out: " + "; ".join(f"{_describe_config(c)}, {shared_memory_bytes(c, arch) / 1024:g} KiB"
                                           for c in left_out) + ")"
    return [line]


def _describe_config(config) -> str:
    kw = config.kwargs
    return (f"{kw['BLOCK_M']} x {kw['BLOCK_N']} x {kw['BLOCK_K']}, {config.num_warps} warps, "
            f"{config.num_stages} stages")


# ------------------------------------------------------------------ the solution, compiled for other GPUs

def _matmul_args(size: Size, device: str):
    return (*_inputs(size, torch.Generator(), device), _output(size, device))


def _fused_args(size: Size, device: str):
    return (*_inputs(size, torch.Generator(), device, bias=True), _output(size, device))


def solution_launches(ns: dict, device: str = "meta") -> list[Callable[[], object]]:
    """Calls that reach every Triton kernel the solution notebook defines (`ns`: its cells run),
    at the shapes the notebook times: grader/notebooks/shipped.py records their launches and compiles
    each one for other architectures. Meta tensors: nothing is allocated or run."""
    x = torch.empty(1000, device=device)
    return [
        lambda: ns["scale_kernel"][(4,)](x, torch.empty_like(x), x.numel(), 3.0, BLOCK=256),
        lambda: ns["naive_matmul"](*_matmul_args(SPEED_SIZE_5A, device)),
        lambda: ns["matmul"](*_matmul_args(SPEED_SIZE_5A, device)),
        lambda: ns["matmul_bias_act"](*_fused_args(SPEED_SIZE_5B, device)),
        lambda: ns["matmul_splitk"](*_matmul_args(SPEED_SIZE_SPLIT_K, device)),
        lambda: ns["matmul_tma"](*_matmul_args(SPEED_SIZES_HOPPER[0], device)),
    ]


# ------------------------------------------------------------------ the learner's launchers

def _sizes_for_here(ex: Exercise, sizes):
    """On a CPU, sizes too large for the interpreter are skipped, and the check says which."""
    if sizes is None or has_gpu():
        return sizes
    kept = [s for s in sizes if interpreter_work(s) <= CPU_MAX_WORK]
    skipped = [s for s in sizes if s not in kept]
    if skipped:
        print(f"(no GPU: {len(skipped)} size(s) too large for Triton's CPU interpreter skipped: "
              f"{', '.join(_describe(s) for s in skipped)}; a GPU runs them all)")
    return kept or list(ex.cpu_sizes)


# ------------------------------------------------------------------ what the notebook calls

def check_matmul(matmul, sizes=None, trials: int = 2):
    return check_correctness(MATMUL, matmul, _sizes_for_here(MATMUL, sizes), trials)


def _check_speed(ex: Exercise, fn, bar_key: str) -> SpeedResult:
    fn = as_learner(fn)
    if not has_gpu():
        # Nothing to time, but a stub or a broken kernel should say so rather than only "no GPU".
        check_correctness(ex, fn, ex.cpu_sizes[:1], trials=1, verbose=False)
    return check_speed(ex, fn, bar_key)


def check_matmul_speed(matmul) -> SpeedResult:
    return _check_speed(MATMUL, matmul, "5a")


def check_fused(matmul_bias_act, sizes=None, trials: int = 2):
    return check_correctness(FUSED, matmul_bias_act, _sizes_for_here(FUSED, sizes), trials)


def check_fused_speed(matmul_bias_act) -> SpeedResult:
    return _check_speed(FUSED, matmul_bias_act, "5b")


def measure_matmul(fn, label: str = "yours", size: Size | None = None, ex: Exercise = None) -> SpeedResult | None:
    """Time a matmul launcher (any version, graded or not) against torch.mm and print the report; never
    raises for speed. `label` names it in the report and the plot. None without a GPU."""
    if not has_gpu():
        print(f"{gpu_or_reason()[1]}: speed not measured.")
        return None
    return measure_version(ex or MATMUL, fn, label, size=size)


def check_matmul_stretch(matmul_splitk, matmul=None) -> SpeedResult | None:
    """The stretch goal: correct on awkward sizes, then timed at the skinny shape against torch.mm
    (bar "5a-stretch", reported, never graded). With `matmul`, your 5a kernel is timed there too.
    Not attempted yet, or no GPU, is not an error, so that "Run All" carries on."""
    if stretch_left_out("5a split-K, stretch goal"):
        return None
    fn = as_learner(matmul_splitk)
    sizes = [(1, 1, 1), (31, 33, 35), (64, 64, 1000), (100, 3, 700), (3, 100, 129)]
    if has_gpu():
        sizes += [(512, 512, 8192), (129, 255, 65537), (1, 4096, 40000), (1000, 1000, 3000)]
    try:
        check_correctness(SPLIT_K, fn, sizes, trials=1)
    except NotImplementedError:
        print("Stretch goal not attempted yet: write matmul_splitk and its kernels above to try it.")
        return None
    if not has_gpu():
        print(f"{gpu_or_reason()[1]}: the stretch goal's speed is not measured here.")
        return None
    result = check_speed(SPLIT_K, fn, "5a-stretch")
    if matmul is not None:
        plain = measure_speed(SPLIT_K, matmul, "5a-stretch")
        print(f"  your 5a kernel at the same shape: {plain.ms:.3f} ms, {plain.speedup:.2f}x torch.mm, "
              f"{plain.rate():.1f} TFLOP/s")
    return result


def _tma_or_reason() -> str | None:
    """None when this GPU has TMA; otherwise what the Hopper rung's check prints instead of running."""
    from ..cuda.capabilities import find

    arch = arch_here()
    info = gpu_info()
    try:
        finding = find("TMA", arch)
    except Exception as exc:  # noqa: BLE001 - no compiler to probe with: fall back on the architecture
        present, evidence = arch.capability >= (9, 0), f"(the TMA probe could not compile here: {exc})"
    else:
        present, evidence = finding.present, finding.evidence
    if present:
        return None
    name = f"{info.name}, " if info else ""
    major, minor = arch.capability
    return (f"The Hopper rung needs TMA (sm_90+): your GPU is {name}{arch.name} (compute capability "
            f"{major}.{minor}). {evidence}. Skipped: nothing was run.")


def interpreter_runs_tma() -> tuple[bool, str]:
    """Whether this Triton's CPU interpreter can run the Hopper rung's kernel. Triton 3.9's can (tensor
    descriptors included); Triton 3.6's cannot run a loop whose bounds depend on the program id, which a
    persistent kernel's tile loop does. Versions between were not tried, so they are not assumed to."""
    import triton

    version = tuple(int(p) for p in triton.__version__.split(".")[:2] if p.isdigit())
    if version >= (3, 9):
        return True, ""
    return False, (f"not checkable in the interpreter of Triton {triton.__version__}: it cannot run a loop whose "
                   "bounds depend on the program id (Triton 3.9's can); a GPU with TMA checks it")


def check_matmul_hopper(matmul_tma, matmul=None) -> tuple[SpeedResult, ...] | None:
    """The Hopper rung: correct on shapes a tensor descriptor allows, then timed against torch.mm at
    4096^3 and at 8192^3 (bar "5a-hopper", reported, never graded; it must hold at both). With `matmul`,
    your 5a kernel is timed at both sizes too. On a GPU without TMA it prints why and runs nothing; with
    no GPU it checks correctness in Triton's interpreter where that can run it. Never raises for a
    missing GPU or TMA, or for not being attempted, so that "Run All" carries on."""
    fn = as_learner(matmul_tma)
    if not has_gpu():
        runs, why = interpreter_runs_tma()
        if not runs:
            print(f"{gpu_or_reason()[1]}: the Hopper rung is {why}.")
            return None
        try:
            check_correctness(HOPPER, fn, HOPPER.cpu_sizes, trials=1)
        except NotImplementedError:
            print("Stretch goal not attempted yet: write matmul_tma and matmul_tma_kernel above to try it.")
            return None
        print(f"{gpu_or_reason()[1]}: the Hopper rung's speed is not measured here.")
        return None
    reason = _tma_or_reason()
    if reason is not None:
        print(reason)
        return None
    first = check_stretch(HOPPER, fn, "5a-hopper", HOPPER_SIZES, "matmul_tma and matmul_tma_kernel")
    if first is None:
        return None
    results = (first, *(check_speed(HOPPER, fn, "5a-hopper", size=s) for s in SPEED_SIZES_HOPPER[1:]))
    met = all(r.passed for r in results)
    print("5a-hopper: " + ", ".join(f"{r.speedup:.2f}x torch.mm at {r.size}" for r in results)
          + f": the bar ({results[0].bar:.2f}x) is {'met at every size' if met else 'not met at every size'}")
    if matmul is not None:
        for size in SPEED_SIZES_HOPPER:
            plain = measure_speed(HOPPER, matmul, "5a-hopper", size=size)
            print(f"  your 5a kernel at {_describe(size)}: {plain.ms:.3f} ms, {plain.speedup:.2f}x torch.mm, "
                  f"{plain.rate():.1f} TFLOP/s")
    return results


def with_torch_epilogue(matmul):
    """A 5b launcher from a 5a matmul: the matmul, then torch's bias add and GELU in place on `out` (no
    extra copies). Torch computes the epilogue on purpose here, so the seam is told (torch_ops)."""
    def unfused(a, b, bias, out):
        matmul(a, b, out)
        out.add_(bias)
        torch.ops.aten.gelu_.default(out, approximate="tanh")
    return as_learner(unfused, "unfused", torch_ops=True)


def compare_unfused(matmul) -> SpeedResult | None:
    """Your 5a matmul, then torch's bias add and GELU (`with_torch_epilogue`), timed as 5b.

    The same bytes as torch eager: a faster matmul alone does not remove the two trips through
    memory that the epilogue costs. Printed, never graded."""
    if not has_gpu():
        print(f"{gpu_or_reason()[1]}: speed not measured.")
        return None
    return measure_version(FUSED, with_torch_epilogue(matmul), "unfused", "5b")


def check_napkin_math(matmul_flops, floor_ms, loaded_bytes) -> None:
    """Exercise 5.0: FLOPs, the time floor at a FLOP rate, and the bytes a grid of tiles loads."""
    names = "`matmul_flops`, `floor_ms` and `loaded_bytes`"
    check_gemm_flops(matmul_flops, "5.0", names, fn="matmul_flops")
    check_floor_ms(floor_ms, "5.0")
    for m, n, k, bm, bn in ((4096, 4096, 4096, 32, 32), (4096, 4096, 4096, 128, 256), (100, 100, 64, 64, 64),
                            (1, 1, 1, 16, 16)):
        want = 2 * k * (m * -(-n // bn) + n * -(-m // bm))
        require_close(call_learner(loaded_bytes, m, n, k, bm, bn, exercise="5.0", names="`loaded_bytes`"), want,
                      f"loaded_bytes({m}, {n}, {k}, {bm}, {bn}) (hint: there are ceil(M/BM) x ceil(N/BN) programs; "
                      "each loads a BM x K strip of A and a K x BN strip of B, 2 bytes an element)")
    print("✓ 5.0 napkin math: FLOPs, time floor and loaded bytes are right")


# ------------------------------------------------------------------ the grouped launch order

def grouped_tile_reference(pid: int, grid_m: int, grid_n: int, group_m: int) -> tuple[int, int]:
    """The grouped order: groups of `group_m` tile rows, walked down each column of the group."""
    per_group = group_m * grid_n
    first_m = (pid // per_group) * group_m
    rows = min(grid_m - first_m, group_m)      # the last group may be shorter
    within = pid % per_group
    return first_m + within % rows, within // rows


def check_grouped_order(grouped_tile) -> None:
    """Exercise 5.1: every program id of a few grids, including a short last group."""
    for grid_m, grid_n, group_m in ((4, 4, 2), (6, 5, 1), (5, 3, 2), (3, 7, 8), (9, 4, 4), (1, 1, 4), (8, 12, 4)):
        for pid in range(grid_m * grid_n):
            got = call_learner(grouped_tile, pid, grid_m, grid_n, group_m, exercise="5.1", names="`grouped_tile`")
            want = grouped_tile_reference(pid, grid_m, grid_n, group_m)
            try:
                ok = len(got) == 2 and (int(got[0]), int(got[1])) == want
            except (TypeError, ValueError):
                ok = False
            if not ok:
                hint = ("with group_m = 1 the order is plain row-major: pid_m = pid // grid_n" if group_m == 1 else
                        "the last group is shorter when grid_m is not a multiple of group_m" if grid_m % group_m else
                        "within a group, consecutive programs go down a column: pid_m changes fastest")
                raise CheckFailed(f"grouped_tile(pid={pid}, grid_m={grid_m}, grid_n={grid_n}, group_m={group_m}) "
                                  f"returned {got!r}, expected {want} (as (pid_m, pid_n)). Hint: {hint}.")
    print("✓ 5.1 grouped launch order: every program lands on the right tile")


def wave_traffic(tile_of: Callable, size: Size, block: tuple[int, int], programs: int,
                 group_m: int = 8) -> tuple[float, float]:
    """(first wave's footprint in bytes, estimated bytes read from HBM for the whole launch).

    A model, not a measurement: programs run in waves of `programs` (one per SM); a wave reads each
    A row strip and B column strip it touches once, from HBM, and nothing is reused between waves.
    """
    m, n, k = size
    bm, bn = block
    grid_m, grid_n = -(-m // bm), -(-n // bn)
    total, first = 0.0, None
    for start in range(0, grid_m * grid_n, programs):
        tiles = [tile_of(p, grid_m, grid_n, group_m) for p in range(start, min(start + programs, grid_m * grid_n))]
        rows = {t[0] for t in tiles}
        cols = {t[1] for t in tiles}
        wave = 2 * k * (len(rows) * bm + len(cols) * bn)
        first = wave if first is None else first
        total += wave
    return first, total


def print_wave_traffic(grouped_tile, sizes=((4096, 4096, 4096), (8192, 8192, 8192)), block=(128, 128),
                       group_m: int = 8) -> None:
    """Row-major against grouped, with your `grouped_tile`, for this GPU's SM count and L2."""
    info = gpu_info()
    sms = info.sm_count if info else 132
    l2 = info.l2_bytes if info and info.l2_bytes else 50 * 2**20
    where = f"{info.name}: {sms} SMs, L2 {l2 / 2**20:.0f} MiB" if info else f"no GPU: an H100's {sms} SMs and 50 MiB L2"
    print(f"{where}; {block[0]} x {block[1]} tiles, one program per SM, GROUP_M = {group_m}")
    print(f"{'size':<24}{'order':<12}{'1st wave needs':>16}{'HBM reads (model)':>20}")
    for size in sizes:
        for name, fn, g in (("row-major", grouped_tile, 1), ("grouped", grouped_tile, group_m)):
            first, total = wave_traffic(fn, size, block, sms, g)
            fits = "fits in L2" if first <= l2 else "> L2"
            print(f"{_describe(size):<24}{name:<12}{first / 2**20:>9.0f} MiB {fits:<10}{total / 1e9:>6.2f} GB")


# ------------------------------------------------------------------ looking inside a kernel

def ptx_summary(compiled) -> str:
    """Which matrix instructions a compiled Triton kernel uses (what chapter 4 checked in SASS)."""
    ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
    if not ptx:
        return "no PTX to look at (the interpreter compiles nothing)"
    counts = {
        "wgmma.mma_async (Hopper warpgroup tensor-core MMA)": ptx.count("wgmma.mma_async"),
        "mma.sync (Ampere-style warp tensor-core MMA)": ptx.count("mma.sync"),
        "cp.async / cp.async.bulk (asynchronous copies to shared memory)": ptx.count("cp.async"),
        "fma.rn.f32 (plain fp32 fused multiply-adds)": ptx.count("fma.rn.f32"),
    }
    meta = getattr(compiled, "metadata", None)
    head = ""
    if meta is not None:
        head = (f"num_warps={getattr(meta, 'num_warps', '?')}, num_stages={getattr(meta, 'num_stages', '?')}, "
                f"shared memory {getattr(meta, 'shared', 0) / 1024:.0f} KiB\n")
    return head + "\n".join(f"  {n:>5}  {what}" for what, n in counts.items())


def show_autotune(kernel) -> None:
    """The configuration the autotuner chose for every shape it has seen."""
    cache = getattr(kernel, "cache", None)
    if not isinstance(cache, dict) or not cache:
        print("The autotuner has not chosen anything yet (or only one configuration was listed, as under "
              "the interpreter).")
        return
    for key, config in cache.items():
        shape = ", ".join(str(x) for x in key if isinstance(x, int))
        print(f"  (M, N, K) = ({shape}): {config}")


# -------------------------------------------------------------------------------- plots

def plot_results(*results: SpeedResult | None):
    """Bar chart: achieved TFLOP/s of each of your kernels beside torch's, under the fp16 ceiling."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 5 on {gpu}")


def plot_tflops_vs_size(kernels: dict[str, Callable], sizes=(512, 1024, 2048, 4096, 8192)):
    """Achieved TFLOP/s of matmul launchers and torch.mm on square fp16 matrices, under the ceiling."""
    from ..harness.ceilings import ceilings

    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    if ungraded_timing_skipped("the sweep"):
        return None
    with captured_stderr():
        curves = sweep_tflops(kernels, sizes, "cuda")
    return draw_sweep(sizes, curves, ceilings().fp16_tflops)


def sweep_tflops(kernels: dict[str, Callable], sizes, device: str) -> dict[str, list[float]]:
    """TFLOP/s of each launcher, and of torch.mm, at every M = N = K in `sizes`."""
    from tqdm.auto import tqdm

    curves = {name: [] for name in [*kernels, "torch.mm"]}
    gen = torch.Generator(device=device).manual_seed(torch.seed())
    for s in tqdm(sizes, desc="sizes"):
        a, b = _inputs((s, s, s), gen, device)
        out = _output((s, s, s), device)
        flops = 2 * s**3
        for name, fn in kernels.items():
            fn(a, b, out)  # compile and autotune outside the timing
            curves[name].append(flops / (bench(lambda: fn(a, b, out)) * 1e-3) / 1e12)
        curves["torch.mm"].append(flops / (bench(lambda: torch.mm(a, b, out=out)) * 1e-3) / 1e12)
        del a, b, out
    return curves


def draw_sweep(sizes, curves: dict[str, list[float]], ceiling_tflops: float):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8))
    for name, tf in curves.items():
        ax.plot(list(sizes), tf, marker="o", label=name)
    ax.axhline(ceiling_tflops, color="black", linestyle="--", linewidth=1)
    ax.text(sizes[0], ceiling_tflops * 1.01, f"fp16 matmul ceiling {ceiling_tflops:,.0f} TFLOP/s",
            va="bottom", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(sizes), [str(s) for s in sizes])
    ax.set_ylim(0, ceiling_tflops * 1.15)
    ax.set_xlabel("M = N = K (fp16)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.legend()
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="5.P", exercise="5a", rung="naive", beside="ungrouped", binding="cache-traffic-per-flop",
    next_rung="larger tiles (128 x 128 x 64) with three or four pipeline stages",
    choices=("larger tiles (128 x 128 x 64) with three or four pipeline stages", "the grouped launch order",
             "pad the tiles", "accumulate in fp32"),
    why="With 32 x 32 tiles each loaded element feeds only 32 multiply-adds: DRAM at 25%, L2 serving most "
        "loads, warps waiting on them (long scoreboard), tensor cores at 19%. Large tiles in the same "
        "row-major order reached 82% and ran 5.5x faster; the grouped order mattered far less.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
