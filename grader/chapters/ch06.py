"""Chapter 6: FlashAttention in Triton.

Exercises
- 6.0       napkin math: bytes of the N x N score matrix, and the FLOPs of attention (CPU-checkable)
- 6.1       `tiled_attention(q, k, v, block_n)`: the online softmax in plain PyTorch, one key/value tile
            at a time, for one head (CPU-checkable)
- 6         `attention(q, k, v, out, causal)`: the FlashAttention forward pass in Triton, fp16,
            q, k, v, out of shape (B, H, N, D), D = 64 or 128, any N. Graded on correctness (causal
            and not), on speed against naive torch attention (bars.toml "6"; torch SDPA reported), and
            on extra memory that grows like N, not N^2
- 6-causal  the same launcher with causal=True must run faster than with causal=False: a kernel that
            skips the key tiles above the diagonal does about half the work (bars.toml "6-causal")
- 6b        the backward pass: `attention_forward(q, k, v, out, lse, causal)` (the forward, also saving the
            rows' log-sum-exp) and `attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal)` (dq, dk,
            dv in Triton, P recomputed tile by tile from lse), composed by the notebook's autograd Function.
            Graded on correctness against float64 autograd (visible and hidden shapes, D = 16 to 128, causal
            and not), torch.autograd.gradcheck in float64, O(N) extra memory, and speed against autograd's
            backward through naive attention (bars.toml "6b"; SDPA's backward reported)
- stretches speed against torch SDPA ("6-stretch", reported only), and a tuned forward against SDPA at
            D = 64 and 128, causal and not (one bar per case, "6-stretch-fast-d64" and so on, reported only)

The grader calls launchers as `fn(*inputs, out)`, so each exercise binds `causal` to the learner's
`attention` with a small wrapper (`bind`). Every tensor the grader passes is contiguous. Without a
GPU, Triton kernels run on CPU tensors through Triton's interpreter (`start()` sets
TRITON_INTERPRET=1), so correctness is checked on small sizes; speed and memory need a GPU.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

from ..cuda.gpu import arch_here, free_gpu_bytes, gpu_or_reason
from ..errors import CheckFailed, LadderError, NoGPUError, NotImplementedYet
from ..calls.rules import unchecked
from ..harness import correctness, plots
from ..harness import answers
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, require_close
from ..harness.attention import attention_flops, attention_reference, scores_by_blocks
from ..harness.exercise import (
    Exercise,
    Requirement,
    SmallSizes,
    SpeedResult,
    as_learner,
    check_correctness,
    check_speed,
    counted_launch,
    launch,
    learner_for,
    not_written_yet,
    require_kernel_does_work,
    stretch_left_out,
    ungraded_timing_skipped,
    with_stderr,
)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench

SPEED_SIZE = (4, 16, 4096, 64)        # (B, H, N, D): the chapter's timing size
# 6-causal's count of executed tensor-core work, at COUNT_SIZE (N as at the timing size, fewer
# heads). Tiles of BLOCK_M query rows that skip the key tiles past their last row do (1 + BLOCK_M/N)/2
# of the multiply-adds of the whole N x N product: 50.8% for 64-row tiles, 56.3% for 512-row tiles at
# N = 4096. A kernel that visits every tile does 100%. Some configurations repeat MMAs across warps
# (64-row tiles with 8 warps: 150% of the product without the mask, on an H100), so a causal launch
# passes with at most SKIP_LIMIT of the product, or SKIP_LIMIT of the learner's own causal=False
# launch while that does at most MAX_REPEAT times the product. SKIP_LIMIT * MAX_REPEAT < 1: a kernel
# that visits every causal tile cannot pass by making its causal=False launch do more.
COUNT_SIZE = (1, 4, 4096, 64)
SKIP_LIMIT = 0.6
MAX_REPEAT = 1.6
MEMORY_SIZES = ((1, 8, 2048, 64), (1, 8, 8192, 64))
MEMORY_SLACK = 32 << 20               # bytes: allocator rounding and small buffers that do not grow with N
NAIVE_BYTES_PER_SCORE = 10            # fp16 S (2) + its fp32 copy (4) + fp32 P (4), alive together
CPU_MAX_N = 256                       # largest N the Triton interpreter checks in a reasonable time

# (rtol, atol) against the float64 reference. A correct fp16 kernel (fp32 scores, P rounded to fp16
# for the P @ V product, fp32 accumulator, fp16 output) stays below a third of this at every size
# up to N = 16384: its error is mostly the final rounding to fp16 (half an ulp, 2.4e-4 relative).
# Rounding P to bf16 instead misses it (errors reach 1.5-2x of it on peaked rows), and so does
# accumulating the output in fp16 from N ~ 1000 on. Scores rounded to fp16, or a softmax without
# the running max, miss it by orders of magnitude on these inputs (see `make_inputs`).
TOLERANCE = (1.5e-3, 1.5e-3)
TILED_TOLERANCE = (2e-4, 2e-4)        # 6.1 runs in float32: a correct version stays below a fifth of it


# ---------------------------------------------------------------------------------- torch versions

def naive_attention(q, k, v, out, causal=False):
    """Attention as written on paper; every N x N intermediate is a tensor in GPU memory."""
    n, d = q.shape[-2], q.shape[-1]
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))   # scores S: (B, H, N, N) fp16
    if causal:
        above_diagonal = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(above_diagonal, float("-inf"))
    p = torch.softmax(s.float(), dim=-1)                     # softmax in fp32: P is (B, H, N, N) fp32
    out.copy_(p.to(q.dtype) @ v)


def sdpa(causal: bool) -> Callable:
    """torch's fused attention (FlashAttention or memory-efficient kernels inside), as an `others` entry."""
    from torch.nn.functional import scaled_dot_product_attention

    return lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=causal)


# ------------------------------------------------------------------------------------- inputs

def make_inputs(size, gen: torch.Generator, device: str, dtype=torch.float16):
    """q, k, v of shape (B, H, N, D): random, with every query row's scores shifted by its own constant.

    q = z + a_i (a_i uniform in [-5, 5], one per row) and k = z + 3: then q_i . k_j / sqrt(D) carries
    a term 3 a_i sqrt(D), the same for every key of row i, up to +-120 at D = 64. Softmax ignores a
    constant added to a row, so the answer is ordinary attention; but exp() of such scores overflows
    or underflows fp32, so a softmax that does not subtract the row's running max returns NaN. The
    same term also spreads the rows from flat to peaked, which exposes precision problems.
    """
    b, h, n, d = size
    shape = (b, h, n, d)
    z = lambda: torch.randn(shape, generator=gen, device=device, dtype=torch.float32)  # noqa: E731
    row_shift = 10 * torch.rand((b, h, n, 1), generator=gen, device=device, dtype=torch.float32) - 5
    q = z() + row_shift
    k = z() + 3.0
    v = z()
    return tuple(t.to(dtype) for t in (q, k, v))


def _empty(size, device: str) -> torch.Tensor:
    return torch.empty(size, device=device, dtype=torch.float16)


def describe(size) -> str:
    b, h, n, d = size
    return f"B={b} H={h} N={n:,} D={d}"


def _speed_size():
    """SPEED_SIZE, with B halved until naive attention (10 bytes a score) fits in 80% of free memory."""
    b, h, n, d = SPEED_SIZE
    free = free_gpu_bytes()
    while b > 1 and (NAIVE_BYTES_PER_SCORE + 2) * b * h * n * n > 0.8 * free:
        b //= 2
    return (b, h, n, d)


@dataclasses.dataclass(frozen=True)
class CausalSkipping(Requirement):
    """After 6-causal's speed: a causal launch must really leave out the key tiles above the diagonal,
    counted in executed tensor-core work at `count_size` (`require_skipping`, `judge_skipping`)."""
    count_size: tuple = COUNT_SIZE
    skip_limit: float = SKIP_LIMIT
    max_repeat: float = MAX_REPEAT
    when = "after-speed"

    def check(self, ex, fn, label: str) -> None:
        require_skipping(fn.base())


def _exercise(causal: bool) -> Exercise:
    variant = "causal" if causal else "non-causal"
    return Exercise(
        key="6-causal" if causal else "6", title=f"attention forward, {variant}",
        where="the code cell under 'Exercise 6'", signature="attention(q, k, v, out, causal)",
        arg_names=("q", "k", "v"),
        make_inputs=make_inputs, make_output=_empty,
        reference=lambda q, k, v: attention_reference(q, k, v, causal),
        baseline=lambda q, k, v, out: naive_attention(q, k, v, out, causal),
        baseline_name="naive torch",
        dtype=torch.float16,
        bytes_moved=lambda s: 4 * s[0] * s[1] * s[2] * s[3] * 2,   # read q, k, v once, write out once
        visible_sizes=((2, 3, 128, 64), (1, 2, 1000, 64), (1, 2, 1024, 128), (2, 2, 333, 128)),
        speed_size=_speed_size, describe_size=describe,
        ceiling="fp16_tflops", flops=lambda s: attention_flops(s, causal),
        others={"torch SDPA": lambda: sdpa(causal)},
        tolerance=lambda s: TOLERANCE,
        cpu_sizes=((1, 2, 64, 64), (1, 2, 100, 64), (2, 1, 77, 128)),
        speed_hint="one program per tile of BLOCK_M query rows and one (batch, head); loop over key/value "
                   "tiles with tl.dot for Q K^T and for P V, keep the running max, sum and accumulator in "
                   "registers, and never write scores to memory. BLOCK_M = 128, BLOCK_N = 64 is a good start.",
        requirements=(CausalSkipping(),) if causal else (),
    )


ATTENTION = _exercise(causal=False)
CAUSAL = _exercise(causal=True)
FORWARD_EXERCISES = (ATTENTION, CAUSAL)   # exercise 6, checked causal and not
# The tuned forward (stretch goal 1b) is timed in four cases, (D, causal), each against its own bar.
FAST_CASES = ((64, False), (64, True), (128, False), (128, True))


def fast_bar_key(d: int, causal: bool) -> str:
    """The bar of the tuned forward at head dimension d, causal or not: "6-stretch-fast-d64-causal"."""
    return f"6-stretch-fast-d{d}" + ("-causal" if causal else "")


BAR_KEYS = {"6": "6", "6-causal": "6-causal", "6-stretch": "6", **{fast_bar_key(d, c): "6" for d, c in FAST_CASES},
            "6b": "6b"}
_SANITIZE_SIZES = ((1, 1, 1, 64), (1, 2, 100, 64), (2, 1, 77, 128), (1, 1, 129, 64))
# `ladder check --sanitize` runs memcheck only: Triton places shared memory and every barrier itself, so
# racecheck and synccheck would test Triton rather than the learner (ask for them with --tool).
SANITIZER_TOOLS = ("memcheck",)
SANITIZE = (
    SmallSizes(ATTENTION, "attention", _SANITIZE_SIZES, trailing=(False,)),
    SmallSizes(CAUSAL, "attention", _SANITIZE_SIZES, trailing=(True,)),
)

HIDDEN_SIZES = ((1, 1, 1, 64), (1, 1, 2, 128), (3, 5, 17, 64), (1, 2, 129, 128), (2, 2, 255, 64),
                (1, 3, 1001, 64), (2, 1, 4097, 128), (1, 2, 16384, 64), (1, 1, 16384, 128))


# ------------------------------------------------------------------ the solution, compiled for other GPUs

def solution_launches(ns: dict, device: str = "meta") -> list[Callable[[], object]]:
    """Calls that reach every Triton kernel the solution notebook defines (`ns`: its cells run): the
    forward pass at the timing shape with D = 64 and D = 128, causal and not (and the tuned forward of
    stretch goal 1b), and the backward pass of exercise 6b with its forward:
    grader/notebooks/shipped.py records their launches and compiles each one for other architectures.
    Meta tensors: nothing is allocated or run."""
    calls = []
    for d in (64, 128):
        q, k, v = make_inputs((*SPEED_SIZE[:3], d), torch.Generator(), device)
        for causal in (False, True):
            calls.append(lambda q=q, k=k, v=v, causal=causal: ns["attention"](q, k, v, torch.empty_like(q), causal))
            if "attention_fast" in ns:   # stretch goal 1b, autotuned: every configuration is compiled
                calls.append(lambda q=q, k=k, v=v, causal=causal:
                             ns["attention_fast"](q, k, v, torch.empty_like(q), causal))
            if d == 64:   # exercise 6b: the forward with lse, then the backward
                lse = torch.empty(q.shape[:3], device=device, dtype=torch.float32)
                grads = [torch.empty_like(q) for _ in range(5)]   # out, dout, dq, dk, dv
                calls.append(lambda q=q, k=k, v=v, g=grads, lse=lse, causal=causal:
                             ns["attention_forward"](q, k, v, g[0], lse, causal))
                calls.append(lambda q=q, k=k, v=v, g=grads, lse=lse, causal=causal:
                             ns["attention_backward"](q, k, v, g[0], lse, *g[1:], causal))
    return calls


# ------------------------------------------------------------------ the learner's launcher, bound

def bind(attention: Callable, causal: bool):
    """`attention(q, k, v, out, causal)` as the harness's `fn(q, k, v, out)`, wherever it runs."""
    return as_learner(attention, "attention").with_trailing(causal)


def _cpu_filter(sizes):
    """Without a GPU, keep the sizes the Triton interpreter runs quickly; say which were left out."""
    if gpu_or_reason()[0]:
        return list(sizes), []
    kept = [s for s in sizes if s[2] <= CPU_MAX_N]
    return kept, [s for s in sizes if s[2] > CPU_MAX_N]


# ------------------------------------------------------------------ what the notebook calls

def check_napkin_math(score_bytes, attention_flops_fn) -> None:
    """Exercise 6.0: bytes of one score matrix, and the FLOPs of attention."""
    names = "`score_bytes` and `attention_flops`"
    for b, h, n, nbytes in ((1, 1, 1, 2), (4, 16, 4096, 2), (4, 16, 4096, 4), (2, 3, 1000, 8)):
        require_close(call_learner(score_bytes, b, h, n, nbytes, exercise="6.0", names=names),
                      b * h * n * n * nbytes,
                      f"score_bytes({b}, {h}, {n}, {nbytes}) (hint: one score per (query, key) pair, for "
                      "every batch and head)")
    for b, h, n, d in ((1, 1, 1, 64), (4, 16, 4096, 64), (2, 3, 1000, 128)):
        require_close(call_learner(attention_flops_fn, b, h, n, d, exercise="6.0", names=names),
                      attention_flops((b, h, n, d)),
                      f"attention_flops({b}, {h}, {n}, {d}) (hint: two matmuls, Q K^T and P V; a multiply-add "
                      "is 2 FLOPs; softmax's few FLOPs per score are not counted)")
    gib = score_bytes(*SPEED_SIZE[:3], 2) / 2**30
    print(f"✓ 6.0 napkin math: right. At {describe(SPEED_SIZE)} one fp16 score matrix is {gib:.1f} GiB, "
          f"and attention is {attention_flops(SPEED_SIZE) / 1e9:.0f} GFLOP")


def _call(fn, *args, exercise: str, names: str):
    """`answers.call_learner` for functions of tensors: the message quotes the learner's traceback lines
    instead of the arguments (which would print whole tensors)."""
    try:
        return as_learner(fn).call(*args)
    except NotImplementedYet:
        raise NotImplementedYet(f"exercise {exercise} is not written yet: write {names} in the cell above "
                                "this one, replacing `raise NotImplementedError()`.") from None


TILED_CASES = ((64, 16, 16), (100, 32, 32), (1, 8, 4), (257, 64, 64), (300, 16, 1000), (512, 64, 128))


def check_tiled_attention(tiled_attention) -> None:
    """Exercise 6.1: online-softmax attention in PyTorch for one head, one key/value tile at a time."""
    with captured_stderr():
        for n, d, block_n in TILED_CASES:
            _one_tiled_case(tiled_attention, n, d, block_n)
    print(f"✓ 6.1 tiled attention: matches float64 attention on {len(TILED_CASES)} shapes "
          "(N not a multiple of block_n, block_n > N, N = 1, scores up to ±120 per row)")


def _one_tiled_case(tiled_attention, n, d, block_n):
    """One shape of exercise 6.1: fresh inputs, unchanged after the call, the result against float64."""
    gen, _ = correctness.fresh_generator("cpu")
    q, k, v = (t[0, 0] for t in make_inputs((1, 1, n, d), gen, "cpu", dtype=torch.float32))
    pristine = correctness.snapshot((q, k, v))
    what = f"6.1 tiled_attention with N={n}, D={d}, block_n={block_n}"
    got = _call(tiled_attention, q, k, v, block_n, exercise="6.1", names="`tiled_attention`")
    correctness.require_unchanged(pristine, (q, k, v), what, ("q", "k", "v"))
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: should return a tensor of shape ({n}, {d}), got {type(got).__name__}")
    if got.dtype != torch.float32:
        raise CheckFailed(f"{what}: returned {got.dtype}, expected torch.float32 (keep the inputs' dtype)")
    expected = attention_reference(*(t.double()[None, None] for t in pristine))[0, 0]
    try:
        correctness.compare(got, expected, rtol=TILED_TOLERANCE[0], atol=TILED_TOLERANCE[1], what=what)
    except CheckFailed as exc:
        if torch.isnan(got).any() or torch.isinf(got).any():
            # The harness's guess about NaN (an output never written) does not apply to a return value.
            text = "\n".join(line for line in exc.args[0].splitlines() if "never written" not in line)
            exc.args = (text + "\nHint: these inputs have scores far above 88, where exp() overflows "
                        "float32. Subtract the running max before exponentiating, and rescale what you have "
                        "summed so far when the max grows.",)
        raise


def check_attention(attention, sizes=None, trials: int = 2) -> list:
    """Correctness of `attention(q, k, v, out, causal)`, causal=False and causal=True, at each size.

    sizes=None: the visible sizes on a GPU, small ones on a CPU. Without a GPU, sizes too large for
    Triton's interpreter are left out (and named)."""
    results, skipped = [], []
    if sizes is not None:
        sizes, skipped = _cpu_filter(sizes)
    for ex in FORWARD_EXERCISES:
        results.append(check_correctness(ex, bind(attention, ex is CAUSAL), sizes, trials))
    if skipped:
        largest = describe(max(skipped, key=lambda s: s[2]))
        print(f"  (no GPU: {len(skipped)} larger sizes left out here, up to {largest}; they run on a GPU)")
    return results


def _require_written(attention) -> None:
    """Without a GPU the speed and memory cells cannot measure anything, but for the released stub they
    should still say "not written yet" rather than "no GPU": run the launcher once on a tiny CPU input
    (through Triton's interpreter) and let only that verdict through."""
    if gpu_or_reason()[0]:
        return
    gen, _ = correctness.fresh_generator("cpu")
    size = (1, 1, 1, 64)
    with captured_stderr():
        try:
            launch(ATTENTION, bind(attention, False), make_inputs(size, gen, "cpu"), _empty(size, "cpu"))
        except NotImplementedYet:
            raise
        except LadderError:
            pass


def check_attention_speed(attention) -> SpeedResult:
    """causal=False, D=64, against naive torch attention; torch SDPA reported."""
    _require_written(attention)
    return check_speed(ATTENTION, bind(attention, False), "6")


def causal_exercise(attention) -> Exercise:
    """The causal exercise timed against the learner's own kernel with causal=False: skipping the key
    tiles above the diagonal should make causal about twice as fast. The baseline runs wherever the
    learner's launcher runs (in the grader's worker when grading), timed in batches as the launcher is.
    Naive torch and SDPA, both causal, are reported beside it."""
    return dataclasses.replace(
        CAUSAL, baseline=bind(attention, False), baseline_name="yours, causal=False",
        others={"naive torch": lambda: lambda q, k, v: naive_attention(q, k, v, torch.empty_like(q), True),
                "torch SDPA": lambda: sdpa(True)},
        speed_hint="skip the key tiles that lie entirely above the diagonal: for a query tile starting at "
                   "row start_m, no key past start_m + BLOCK_M - 1 is visible, so end the loop there; mask "
                   "only the tiles that cross the diagonal.")


def check_causal_speed(attention) -> SpeedResult:
    """causal=True against the learner's causal=False; on a GPU, then the executed tensor-core work
    of a causal launch (the exercise's CausalSkipping requirement)."""
    _require_written(attention)
    return check_speed(causal_exercise(attention), bind(attention, True), "6-causal")


def require_skipping(attention) -> None:
    """On a GPU: a causal launch must really leave out the key tiles above the diagonal.

    The speed bar compares the learner's causal launch with their own causal=False launch, so a
    causal=False path slowed down on purpose would pass it without skipping anything. Here each
    launch runs once at COUNT_SIZE on fresh random inputs with every Triton kernel replaced by a copy
    that counts the multiply-adds its tensor-core MMAs perform (grader.cuda.tccount); results are
    verified as in every trial. The verdict (`judge_skipping`) measures the causal count against the
    whole N x N product, so slowing the causal=False launch cannot help.
    """
    if not gpu_or_reason()[0]:
        return
    counted = {causal: _count_launch(attention, causal) for causal in (True, False)}
    judge_skipping(counted[True], counted[False], COUNT_SIZE)


def _count_launch(attention, causal: bool):
    fn = bind(attention, causal)
    ex = CAUSAL if causal else ATTENTION
    what = f"6-causal work, causal={causal}, {describe(COUNT_SIZE)}"
    # A plain launch at this size first, so an autotuner settles its choice before anything is
    # counted (its trial runs would count too).
    check_correctness(ex, fn, [COUNT_SIZE], trials=1, device="cuda", verbose=False)
    tally, _ = counted_launch(ex, fn, COUNT_SIZE, what + ", instrumented run")
    return tally


def judge_skipping(causal, noncausal, size) -> None:
    """The verdict on counted launches at `size`, causal and not (grader.cuda.tccount Tallies)."""
    b, h, n, d = size
    full = 2 * b * h * n * n * d                 # Q K^T and P V over every (query, key) pair
    needed = 2 * b * h * (n * (n + 1) // 2) * d  # the same over the visible pairs only
    done, plain = causal.total, noncausal.total
    share, repeat = done / full, plain / full
    if done <= SKIP_LIMIT * full or (done <= SKIP_LIMIT * plain and plain <= MAX_REPEAT * full):
        if done >= needed:
            extra = (f"; your causal=False launch did {100 * repeat:.0f}% of it, so your kernel repeats some "
                     f"MMAs across warps, and the causal one did {100 * done / plain:.1f}% of that"
                     if repeat > 1.05 else "")
            print(f"6-causal work: a causal launch at {describe(size)} did {100 * share:.1f}% of the multiply-adds "
                  f"of the whole N x N product on the tensor cores{extra} (at most {100 * SKIP_LIMIT:.0f}%; "
                  "counted by an instrumented copy of your kernel).")
            return
    uncounted = {**noncausal.uncounted, **causal.uncounted}
    if done < needed or uncounted:
        unweighed = {**noncausal.unweighed, **causal.unweighed}
        if uncounted:
            why = "; ".join(f"`{name}`: {reason}" for name, reason in uncounted.items())
            unchecked("6-causal work", "counting your kernel's tensor-core work, which tells skipping from a slowed "
                      "causal=False launch,", why)
            return
        elif unweighed:
            ops = sorted({op for ops in unweighed.values() for op in ops})
            cause = f"your kernel uses tensor-core instructions that cannot be counted ({', '.join(ops)})"
        else:
            cause = (f"only {100 * done / needed:.0f}% of the multiply-adds a causal launch needs ran on the tensor "
                     "cores, the rest elsewhere")
        print(f"Note: 6-causal work: {cause}, so skipping rests on the timing alone.")
        return
    by_kernel = ", ".join(f"`{name}` {v:,}" for name, v in causal.macs.items()) or "none"
    if plain > MAX_REPEAT * full and done > SKIP_LIMIT * plain:
        mine = "."
    elif plain > MAX_REPEAT * full:
        mine = (f", and your causal=False launch {100 * repeat:.0f}%: more than {MAX_REPEAT:g} times the product, "
                "so it cannot serve as the measure.")
    else:
        mine = f", and {100 * done / plain:.0f}% of what your causal=False launch did ({100 * repeat:.0f}% of it)."
    raise CheckFailed(
        f"6-causal: a causal launch at {describe(size)} did {done:,} multiply-adds on the tensor cores (by kernel: "
        f"{by_kernel}): {100 * share:.0f}% of the {full:,} of the whole N x N product{mine} Skipping the key "
        f"tiles above the diagonal leaves about half; a causal launch passes with at most {100 * SKIP_LIMIT:.0f}% "
        f"of the product, or of your causal=False launch's work where that is at most {MAX_REPEAT:g} times the "
        "product. Your kernel still computes the tiles it masks, so its causal speedup does not come from "
        "skipping them: end the key loop at the query tile's last row. (Counted by running a copy of your kernel "
        "with a counter added before each tensor-core instruction.)", reason="not-skipped")


# ------------------------------------------------------------------------------- memory

def _require_linear_memory(who: str, inputs: str, used: int, size, column: str, variant: str, lines: list,
                           kept: str, grows: str, advice: str) -> None:
    """One line of a memory check's table, and CheckFailed when `used` passes the O(N) budget: the forward's
    (6) and the backward's (6b) checks share the budget, the table and the N^2 explanation."""
    budget = memory_budget(size)
    quadratic = size[0] * size[1] * size[2] ** 2 * 2   # one fp16 value per (query, key) pair
    lines.append(f"  {describe(size)}, {column}: extra {_mib(used):>11} (budget {_mib(budget)}; fp16 {kept} "
                 f"would take {_mib(quadratic)})")
    if used > budget:
        raise CheckFailed(
            f"{who} allocated {_mib(used)} above {inputs} at {describe(size)} ({variant}), more than the O(N) "
            f"budget of {_mib(budget)}.\n" + "\n".join(lines) + f"\nMemory that grows like N^2 means {grows} "
            f"stored for every (query, key) pair: {_mib(quadratic)} in fp16 here. {advice}", reason="memory")


def memory_budget(size) -> int:
    """The extra bytes a launch may allocate: O(N), with room for honest buffers.

    Twice the bytes of q, k, v and out (a contiguous copy of every operand, or an fp32 output
    buffer), four fp32 numbers per query row (running max, running sum, log-sum-exp), and a constant
    for the allocator's rounding. Scores that grow like N^2 exceed it: at B=1 H=8 D=64 the budget is
    48 MiB at N=2048 and 97 MiB at N=8192, where the fp16 scores alone take 64 MiB and 1 GiB.
    """
    b, h, n, d = size
    return 2 * (4 * b * h * n * d * 2) + 16 * b * h * n + MEMORY_SLACK


def extra_memory(fn: Callable, inputs, out) -> int:
    """Peak bytes allocated by one launch, above what was allocated before it (inputs and out included).

    Measured with torch's caching-allocator statistics, so it sees every tensor a launcher creates."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn(*inputs, out)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.1f} MiB"


def check_attention_memory(attention, sizes=MEMORY_SIZES) -> dict:
    """Extra memory of a correct launch, causal and not, at two N four times apart: within the O(N) budget."""
    _require_written(attention)
    ok, reason = gpu_or_reason()
    if not ok:
        raise NoGPUError(f"no GPU: memory not measured for exercise 6 (attention forward). {reason}; the memory "
                         "cell scores 0 without a GPU. Correctness is still checked on the CPU.")
    found = {}
    lines = []
    with captured_stderr() as err:
        try:
            for size in sizes:
                for ex in FORWARD_EXERCISES:
                    fn = bind(attention, ex is CAUSAL)
                    found[(size, ex.key)] = used = _measured_launch(ex, fn, size)
                    variant = ex.title.split(", ")[1]
                    _require_linear_memory(
                        "6 memory: your launch", "its inputs and output", used, size, f"{variant:<10}", variant,
                        lines, "scores", "scores (or probabilities)",
                        "Keep each score tile in registers: compute it, fold it into the running max, sum and "
                        "accumulator, and drop it.")
        except LadderError as exc:
            raise with_stderr(exc, err) from None
    (s1, s2) = sizes[0], sizes[-1]
    print(f"✓ 6 memory: extra memory stays within the O(N) budget (2x the bytes of q, k, v and out, "
          f"4 fp32 per row, {_mib(MEMORY_SLACK)} slack)\n" + "\n".join(lines) +
          f"\n  N grew {s2[2] // s1[2]}x: scores would grow {(s2[2] // s1[2]) ** 2}x.")
    return found


def _measured_launch(ex: Exercise, fn: Callable, size) -> int:
    """One verified launch at `size` (compiling first), then one measured and verified again."""
    check_correctness(ex, fn, [size], trials=1, device="cuda", verbose=False)
    gen, _ = correctness.fresh_generator("cuda")
    inputs = ex.make_inputs(size, gen, "cuda")
    pristine = correctness.snapshot(inputs)
    out = correctness.poison(ex.make_output(size, "cuda"))
    what = f"{ex.key} {ex.title}, {describe(size)} (memory check)"
    try:
        used = fn.peak_memory(*inputs, out)
    except CheckFailed as exc:
        if "OutOfMemoryError" in str(exc):
            raise CheckFailed(f"{what}: the GPU ran out of memory. A flash kernel needs almost none beyond its "
                              "inputs and output; scores stored for every (query, key) pair need "
                              f"{_mib(size[0] * size[1] * size[2] ** 2 * 2)} in fp16 here.\n{exc}") from None
        raise
    correctness.require_unchanged(pristine, inputs, what, ex.arg_names)
    expected = ex.reference(*[t.to(torch.float64) for t in pristine])
    correctness.compare(out, expected, rtol=TOLERANCE[0], atol=TOLERANCE[1], what=what)
    return used


def measure_naive(size=SPEED_SIZE, causal: bool = False) -> dict | None:
    """Peak extra memory and time of `naive_attention` at `size`, printed against the fp16 ceiling."""
    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here. On an H200 naive attention at {describe(SPEED_SIZE)} took "
              "10 GiB beyond its inputs and output.")
        return None
    from ..harness.ceilings import ceilings

    size = size if (NAIVE_BYTES_PER_SCORE + 2) * size[0] * size[1] * size[2] ** 2 < 0.8 * free_gpu_bytes() \
        else _speed_size()
    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    with captured_stderr():
        q, k, v = make_inputs(size, gen, "cuda")
        out = _empty(size, "cuda")
        extra = extra_memory(lambda q, k, v, out: naive_attention(q, k, v, out, causal), (q, k, v), out)
        ms = bench(lambda: naive_attention(q, k, v, out, causal))
        ceil = ceilings()
    b, h, n, d = size
    score = b * h * n * n * 2
    tflops = attention_flops(size, causal) / (ms * 1e-3) / 1e12
    print(f"naive attention{' (causal)' if causal else ''} at {describe(size)}:\n"
          f"  extra memory {extra / 2**30:6.2f} GiB = {extra / score:.1f} x the fp16 score matrix "
          f"({score / 2**30:.2f} GiB)\n"
          f"  time         {ms:8.3f} ms = {tflops:.1f} TFLOP/s, {100 * tflops / ceil.fp16_tflops:.0f}% of this GPU's "
          f"fp16 matmul ceiling ({ceil.fp16_tflops:.0f} TFLOP/s)")
    del q, k, v, out
    torch.cuda.empty_cache()
    return {"size": size, "extra_bytes": extra, "ms": ms, "tflops": tflops}


# -------------------------------------------------------------------------------- stretch goals

# The stretch goal's exercise: causal=False against torch SDPA. SDPA returns a new tensor; the harness
# ignores what a baseline returns, so nothing is copied into `out`.
VS_SDPA = dataclasses.replace(
    ATTENTION, baseline=lambda q, k, v, out: sdpa(False)(q, k, v), baseline_name="torch SDPA",
    others={"naive torch": lambda: lambda q, k, v: naive_attention(q, k, v, torch.empty_like(q))})


def check_attention_stretch(attention) -> SpeedResult | None:
    """Stretch: your kernel against torch SDPA, bar 6-stretch, reported only. Never stops Run All."""
    try:
        _require_written(attention)
        return check_speed(VS_SDPA, bind(attention, False), "6-stretch")
    except NotImplementedError:
        print("Stretch goal not attempted yet: write `attention` first (exercise 6).")
    except NoGPUError as exc:
        print(f"Stretch goal not measured: {exc}")
    return None


# The tuned forward (stretch goal 1b): against torch SDPA's FlashAttention backend at D = 64 and 128, causal and not
# (FAST_CASES), each case against its own bar (fast_bar_key), reported only.


def fast_configs(configs: list) -> list:
    """The autotuning configurations for the tuned forward: without a GPU (the interpreter: nothing to time)
    only the first; on a GPU those whose tiles fit its shared memory per block, or the smallest if none
    does. The count is an upper bound at D = 128, fp16: the Q tile and a K and a V tile for each stage
    (Triton 3.9 compiles every configuration of the solution to at most this for sm_75 to sm_90,
    tests/cuda/test_cross_arch.py)."""
    arch = arch_here()
    if arch is None:
        return list(configs[:1])

    def need(c, d=128):
        kw = c.kwargs
        return 2 * d * (kw["BLOCK_M"] + 2 * kw["BLOCK_N"] * c.num_stages)

    fits = [c for c in configs if need(c) <= arch.max_shared_per_block]
    return fits or [min(configs, key=need)]


def sdpa_flash(causal: bool) -> Callable:
    """torch SDPA held to its FlashAttention backend (FlashAttention-2, compute capability 8.0 and later).
    Left to choose, SDPA on an H100 (torch 2.11) runs a faster cuDNN kernel: the tuned forward's target
    is FlashAttention's, and SDPA's own choice is reported beside it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    plain = sdpa(causal)

    def flash(q, k, v):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return plain(q, k, v)
    return flash


def fast_exercise(d: int, causal: bool) -> Exercise:
    """Exercise 6 (causal or not) at head dimension d, timed against torch SDPA's FlashAttention backend
    (causal or not) where the GPU has it (8.0 and later), SDPA's own choice of backend reported; on older
    GPUs against SDPA's own choice."""
    base = CAUSAL if causal else ATTENTION
    arch = arch_here()
    if arch is not None and arch.capability >= (8, 0):
        baseline, name = sdpa_flash(causal), "torch SDPA (FlashAttention backend)"
        others = {"torch SDPA (its own choice of backend)": lambda: sdpa(causal)}
    else:
        baseline, name, others = sdpa(causal), "torch SDPA", {}
    return dataclasses.replace(
        base, key=fast_bar_key(d, causal), title=f"tuned attention forward, D={d}, {'causal' if causal else 'non-causal'}",
        baseline=lambda q, k, v, out: baseline(q, k, v), baseline_name=name,
        speed_size=lambda: _speed_size()[:3] + (d,), others=others, requirements=())


def check_attention_fast(attention_fast) -> list | None:
    """Stretch 1b: the tuned forward, correct (causal and not), then timed against SDPA (FlashAttention)
    at D = 64 and 128, causal and not, each case against its own bar (reported only). Never stops Run All."""
    if stretch_left_out("6 tuned forward, stretch goal 1b"):
        return None
    try:
        check_attention(attention_fast, sizes=[(1, 2, 100, 64), (2, 1, 77, 128)] if not gpu_or_reason()[0] else None,
                        trials=1)
    except NotImplementedError:
        print("Stretch goal not attempted yet: write `attention_fast` and its kernel above to try it.")
        return None
    results = []
    for d, causal in FAST_CASES:
        try:
            results.append(check_speed(fast_exercise(d, causal), bind(attention_fast, causal), fast_bar_key(d, causal)))
        except NoGPUError as exc:
            print(f"Stretch goal not measured: {exc}")
            return None
    return results


# ------------------------------------------------------------------ exercise 6b: the backward pass

# The learner's two launchers (the autograd Function in the notebook is built from them):
#   attention_forward(q, k, v, out, lse, causal)                  out, and lse[b, h, i] = log sum_j exp(s_ij)
#   attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal)
# q, k, v, out, dout, dq, dk, dv: (B, H, N, D), fp16 (fp64 for the gradient check); lse: (B, H, N), fp32
# (fp64 for fp64 inputs), natural-log units. The backward is graded on its own, fed the exact out and lse
# (float64 attention rounded to the inputs' dtype), so that a forward error never shows up as a backward one;
# the forward's lse is checked in the gradient-check cell, with the two launchers composed by autograd.
BACKWARD_VISIBLE = ((2, 3, 128, 64), (1, 2, 1000, 64), (1, 2, 1024, 128), (2, 2, 333, 32))
BACKWARD_CPU_SIZES = ((1, 2, 64, 64), (1, 1, 100, 32), (1, 1, 33, 128), (2, 1, 40, 16))
BACKWARD_HIDDEN = ((1, 1, 1, 64), (1, 1, 2, 128), (3, 5, 17, 16), (1, 2, 129, 32), (2, 2, 255, 64),
                   (1, 3, 1001, 128), (2, 1, 4097, 64), (1, 1, 4096, 128))
GRADCHECK_SIZES = ((1, 2, 5, 16), (1, 1, 40, 32))
BACKWARD_BYTES_PER_SCORE = 20   # naive autograd: fp16 S and P, fp32 P kept, then fp16 dP and fp32 dS, dP
# Each gradient against float64 autograd: |got - want| <= T * (max(max|want|, max|dv|) + |want|). The fp16 solution's
# arithmetic (P and dS rounded to fp16 for the tensor-core products, fp32 sums, fp16 result) reaches at
# most 1.1e-3 of it at N = 1000-4097, D = 64 and 128, causal and not (a torch emulation of it, on the
# shifted inputs of `make_inputs`), and 2.2e-3 at the small CPU sizes through Triton's interpreter;
# T = 5e-3 leaves twice that. A missing delta, scale or causal mask errs by O(1) of the largest gradient.
BACKWARD_TOLERANCE = 5e-3


def lse_reference(q, k, causal=False, chunk_bytes=64 << 20):
    """log sum_j exp(q_i . k_j / sqrt(D)) for every row, in the inputs' precision, a block of rows at a time."""
    lse = torch.empty(q.shape[:3], dtype=q.dtype, device=q.device)
    for i0, i1, s in scores_by_blocks(q, k, causal, chunk_bytes):
        lse[:, :, i0:i1] = torch.logsumexp(s, dim=-1)
    return lse


def backward_reference(q, k, v, dout, causal, chunk_bytes=1 << 30):
    """dq, dk, dv of naive attention by torch autograd, in float64, a few (batch, head) pairs at a time so
    that the N x N intermediates of one group stay near chunk_bytes."""
    b, h, n, d = q.shape
    flat = [t.detach().double().reshape(b * h, n, d) for t in (q, k, v, dout)]
    grads = [torch.empty_like(flat[0]) for _ in range(3)]
    heads = max(1, chunk_bytes // (8 * 6 * n * n))
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None
    with torch.enable_grad():   # also where autograd switched it off (inside a Function's backward)
        for j0 in range(0, b * h, heads):
            qc, kc, vc = (t[j0:j0 + heads].clone().requires_grad_() for t in flat[:3])
            s = (qc @ kc.transpose(-2, -1)) / math.sqrt(d)
            if causal:
                s = s.masked_fill(mask, float("-inf"))
            o = torch.softmax(s, dim=-1) @ vc
            for g, got in zip(grads, torch.autograd.grad(o, (qc, kc, vc), flat[3][j0:j0 + heads])):
                g[j0:j0 + heads] = got
    return tuple(g.reshape(b, h, n, d) for g in grads)


def backward_inputs(size, gen: torch.Generator, device: str, causal: bool, dtype=torch.float16):
    """(q, k, v, out, lse, dout): the inputs of `make_inputs`, the exact forward's out (rounded to dtype)
    and lse (fp32; fp64 for fp64 inputs), and a random dout."""
    q, k, v = make_inputs(size, gen, device, dtype)
    dout = torch.randn(size, generator=gen, device=device, dtype=torch.float32).to(dtype)
    q64, k64, v64 = (t.double() for t in (q, k, v))
    out = attention_reference(q64, k64, v64, causal).to(dtype)
    lse = lse_reference(q64, k64, causal).to(torch.float64 if dtype == torch.float64 else torch.float32)
    return q, k, v, out, lse, dout


class _Scaled:
    """The speed check's tolerance for the three stacked gradients: T of the largest |gradient| the last
    reference returned (the cells before it check each gradient against its own magnitude)."""

    def __init__(self):
        self.scale = 1.0

    def reference(self, causal):
        def ref(q, k, v, out, lse, dout):
            grads = torch.stack(backward_reference(q, k, v, dout, causal))
            self.scale = float(grads.abs().max())
            return grads
        return ref

    def tolerance(self, size):
        return (BACKWARD_TOLERANCE, BACKWARD_TOLERANCE * self.scale)


class RetainedBackward:
    """torch's backward of a forward function, timed alone: the graph is built once per set of inputs (on
    clones, so that the timed sets' inputs can be refilled in place) and kept, and each call runs
    autograd's backward through it again (retain_graph). What a training step spends in the backward."""

    def __init__(self, forward: Callable):
        self.forward, self.key, self.graph = forward, None, None

    def __call__(self, q, k, v, *rest):
        dout = rest[2] if len(rest) >= 3 else rest[-1]
        key = (q.data_ptr(), k.data_ptr(), v.data_ptr(), tuple(q.shape))
        if key != self.key:
            self.graph = None
            leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
            self.graph = (leaves, self.forward(*leaves))
            self.key = key
        leaves, o = self.graph
        return torch.autograd.grad(o, leaves, dout, retain_graph=True)


def naive_backward(causal: bool) -> RetainedBackward:
    """autograd through `naive_attention`: the bar's baseline."""
    def forward(q, k, v):
        out = torch.empty_like(q)
        naive_attention(q, k, v, out, causal)
        return out
    return RetainedBackward(forward)


def sdpa_backward(causal: bool) -> RetainedBackward:
    return RetainedBackward(sdpa(causal))


def _backward_speed_size():
    """SPEED_SIZE, with B halved until naive attention's forward and backward fit in 80% of free memory."""
    b, h, n, d = SPEED_SIZE
    free = free_gpu_bytes()
    while b > 1 and BACKWARD_BYTES_PER_SCORE * b * h * n * n > 0.8 * free:
        b //= 2
    return (b, h, n, d)


def _backward_exercise(causal: bool, scaled: _Scaled | None = None) -> Exercise:
    scaled = scaled or _Scaled()
    variant = "causal" if causal else "non-causal"
    return Exercise(
        key="6b", title=f"attention backward, {variant}", where="the code cell under 'Exercise 6b'",
        signature="attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal)",
        arg_names=("q", "k", "v", "out", "lse", "dout"),
        make_inputs=lambda size, gen, dev: backward_inputs(size, gen, dev, causal),
        make_output=lambda size, dev: torch.empty((3, *size), device=dev, dtype=torch.float16),
        reference=scaled.reference(causal),
        baseline=lambda q, k, v, out, lse, dout, grads: naive_backward_cached(causal)(q, k, v, out, lse, dout),
        baseline_name="naive torch backward",
        dtype=torch.float16,
        # read q, k, v, out, dout once, write dq, dk, dv once
        bytes_moved=lambda s: 8 * s[0] * s[1] * s[2] * s[3] * 2,
        visible_sizes=BACKWARD_VISIBLE, speed_size=_backward_speed_size, describe_size=describe,
        ceiling="fp16_tflops", flops=lambda s: int(2.5 * attention_flops(s, causal)),
        others={"torch SDPA backward": lambda: sdpa_backward(causal)},
        tolerance=scaled.tolerance, cpu_sizes=BACKWARD_CPU_SIZES, split_output=True,
        speed_hint="recompute P tile by tile from the saved lse (never store it), one kernel for dK and dV that "
                   "walks the query tiles for a tile of keys, one for dQ that walks the key tiles; 64 x 64 tiles "
                   "and 4 warps are a good start.",
    )


_NAIVE_BACKWARDS: dict = {}


def naive_backward_cached(causal: bool) -> RetainedBackward:
    """One retained naive graph per causal setting, kept between the baseline's timed calls."""
    if causal not in _NAIVE_BACKWARDS:
        _NAIVE_BACKWARDS[causal] = naive_backward(causal)
    return _NAIVE_BACKWARDS[causal]


BACKWARD = _backward_exercise(causal=False)
BACKWARD_CAUSAL = _backward_exercise(causal=True)
EXERCISES = FORWARD_EXERCISES + (BACKWARD,)   # 6b's causal variant shares BACKWARD's key and bar
SANITIZE += (
    SmallSizes(BACKWARD, "attention_backward", _SANITIZE_SIZES, trailing=(False,)),
    SmallSizes(BACKWARD_CAUSAL, "attention_backward", _SANITIZE_SIZES, trailing=(True,)),
)


def bind_backward(attention_backward, causal: bool):
    return as_learner(attention_backward, "attention_backward").with_trailing(causal)


def _backward_sizes(sizes):
    """The sizes a backward cell checks here: on a CPU the visible ones become the interpreter's small ones,
    and larger explicit ones are left out (and named)."""
    on_gpu = gpu_or_reason()[0]
    if sizes is None:
        return list(BACKWARD_VISIBLE if on_gpu else BACKWARD_CPU_SIZES), []
    return _cpu_filter(sizes)


def check_backward(attention_backward, sizes=None, trials: int = 1) -> int:
    """Exercise 6b: dq, dk, dv from `attention_backward` against float64 autograd of naive attention,
    causal and not, each gradient within BACKWARD_TOLERANCE of its own largest magnitude. The launcher
    rules of every exercise apply (only the learner's kernels compute; with them switched off, nothing
    is written)."""
    dev = "cuda" if gpu_or_reason()[0] else "cpu"
    sizes, skipped = _backward_sizes(sizes)
    checked = 0
    with captured_stderr() as err:
        try:
            for causal in (False, True):
                ex = BACKWARD_CAUSAL if causal else BACKWARD
                fn = learner_for_backward(attention_backward, causal)
                for size in sizes:
                    for trial in range(trials):
                        _one_backward(ex, fn, size, causal, dev)
                        checked += 1
                    if not fn.probed:
                        require_kernel_does_work(ex, fn, size, dev, f"6b backward, {describe(size)}, causal={causal}")
                        fn.probed = True
        except NotImplementedYet:
            raise not_written_yet(BACKWARD) from None
        except LadderError as exc:
            raise with_stderr(exc, err) from None
    print(f"✓ 6b attention backward: dq, dk and dv match float64 autograd of naive attention on {checked} cases, "
          f"causal and not ({', '.join(describe(s) for s in sizes)}; on {'the GPU' if dev == 'cuda' else 'the CPU'}); "
          "fresh inputs each case, outputs poisoned with NaN, inputs unchanged")
    if skipped:
        print(f"  (no GPU: {len(skipped)} larger sizes left out here, up to {describe(max(skipped, key=lambda s: s[2]))}; "
              "they run on a GPU)")
    return checked


def learner_for_backward(attention_backward, causal: bool):
    """The seam for `attention_backward` with `causal` bound, its stacked output split into dq, dk, dv."""
    return learner_for(BACKWARD, bind_backward(attention_backward, causal))


def _one_backward(ex: Exercise, fn, size, causal: bool, dev: str) -> None:
    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    pristine = correctness.snapshot(inputs)
    guard = correctness.guarded(ex.make_output(size, dev))
    out = correctness.poison(guard.out)
    what = f"6b backward, {describe(size)}, causal={causal}"
    launch(ex, fn, inputs, out)
    guard.check(what)
    correctness.require_unchanged(pristine, inputs, what, ex.arg_names)
    q, k, v, _, _, dout = pristine
    wanted = backward_reference(q, k, v, dout, causal)
    # dS = P (dP - delta) cancels: its rounding error scales with dP = dO V^T, whose size dv shows, even where
    # dq and dk are near 0 (N = 1: a single key gets all the weight, and dq = dk = 0 exactly).
    floor = float(wanted[2].abs().max())
    for name, got, want in zip(("dq", "dk", "dv"), out.unbind(0), wanted):
        atol = BACKWARD_TOLERANCE * max(float(want.abs().max()), floor)
        correctness.compare(got, want, rtol=BACKWARD_TOLERANCE, atol=atol, what=f"{what}, {name}")


def check_backward_gradcheck(attention_forward, attention_backward) -> None:
    """Exercise 6b, the two launchers together: `attention_forward`'s out and lse (fp16) against float64, then
    torch.autograd.gradcheck in float64 of the Function that composes them, as the notebook's
    FlashAttention does (the launcher rules apply to every call)."""
    dev = "cuda" if gpu_or_reason()[0] else "cpu"
    cases = 0
    with captured_stderr() as err:
        try:
            for causal in (False, True):
                fwd = as_learner(attention_forward, "attention_forward").with_trailing(causal)
                bwd = bind_backward(attention_backward, causal)
                for size in ((1, 2, 100, 64), (2, 1, 33, 128)):
                    _one_forward_lse(fwd, size, causal, dev)
                    cases += 1
                for size in GRADCHECK_SIZES:
                    _one_gradcheck(fwd, bwd, size, causal, dev)
                    cases += 1
        except NotImplementedYet:
            raise NotImplementedYet("exercise 6b is not written yet: write `attention_forward` and "
                                    "`attention_backward` and their kernels in the code cell under 'Exercise 6b', "
                                    "replacing `raise NotImplementedError()`.") from None
        except LadderError as exc:
            raise with_stderr(exc, err) from None
    print(f"✓ 6b forward with lse and gradcheck: attention_forward's out and lse match float64 (fp16, causal and not), "
          f"and torch.autograd.gradcheck passes in float64 on {', '.join(describe(s) for s in GRADCHECK_SIZES)}, "
          f"causal and not ({cases} cases, on {'the GPU' if dev == 'cuda' else 'the CPU'})")


def _one_forward_lse(fwd, size, causal: bool, dev: str) -> None:
    gen, _ = correctness.fresh_generator(dev)
    q, k, v = make_inputs(size, gen, dev)
    pristine = correctness.snapshot((q, k, v))
    out = correctness.poison(torch.empty_like(q))
    lse = correctness.poison(torch.empty(size[:3], device=dev, dtype=torch.float32))
    what = f"6b attention_forward, {describe(size)}, causal={causal}"
    fwd.call(q, k, v, out, lse, launcher=True)
    correctness.require_unchanged(pristine, (q, k, v), what, ("q", "k", "v"))
    q64, k64, v64 = (t.double() for t in pristine)
    correctness.compare(out, attention_reference(q64, k64, v64, causal), rtol=TOLERANCE[0], atol=TOLERANCE[1],
                        what=what + ", out")
    # lse is a sum's log: an fp32 sum of up to N terms is good to about 1e-6 relative; the scores are fp32
    # products of fp16 inputs, up to about 150 in size here.
    correctness.compare(lse, lse_reference(q64, k64, causal), rtol=1e-4, atol=1e-3, what=what + ", lse")


def _one_gradcheck(fwd, bwd, size, causal: bool, dev: str) -> None:
    what = f"6b gradcheck, float64, {describe(size)}, causal={causal}"

    class Composed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            q, k, v = (t.detach() for t in (q, k, v))
            out = torch.empty_like(q)
            lse = torch.empty(q.shape[:3], device=q.device, dtype=q.dtype)
            fwd.call(q, k, v, out, lse, launcher=True)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        def backward(ctx, dout):
            # Detached: in grading the launchers run in another process, and a tensor that carries autograd
            # history cannot cross to it.
            q, k, v, out, lse = (t.detach() for t in ctx.saved_tensors)
            grads = torch.empty((3, *q.shape), device=q.device, dtype=q.dtype)
            bwd.call(q, k, v, out, lse, dout.detach().contiguous(), *grads.unbind(0), launcher=True)
            return tuple(grads.unbind(0))

    from torch.autograd.gradcheck import GradcheckError

    gen, _ = correctness.fresh_generator(dev)
    q, k, v = (0.5 * torch.randn(size, generator=gen, device=dev, dtype=torch.float64) for _ in range(3))
    try:
        ok = torch.autograd.gradcheck(Composed.apply, (q.requires_grad_(), k.requires_grad_(), v.requires_grad_()),
                                      eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=True)
    except LadderError:
        raise
    except GradcheckError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckFailed(f"{what}: the gradients of your attention_backward do not match the finite differences of "
                          f"your attention_forward ({first}). Both run in float64 here: every sum, the lse and "
                          "the probabilities in the inputs' dtype (ACC = tl.float64), nothing rounded to fp16 or "
                          "fp32.", reason="wrong-result") from None
    except Exception as exc:  # noqa: BLE001 - torch's own errors around the learner's launchers
        raise CheckFailed(f"{what}: gradcheck could not run: {type(exc).__name__}: {str(exc)[:300]}\nYour "
                          "launchers must accept float64 tensors (fp64 lse) for this check.",
                          reason="wrong-result") from None
    if not ok:
        raise CheckFailed(f"{what}: gradcheck failed.", reason="wrong-result")
    # gradcheck compares directional derivatives (fast mode: one random direction), which averages out
    # rounding; so the gradients themselves are compared with float64 autograd too, at 1e-5 of the largest
    # gradient: gradients rounded to fp16 are off by about 5e-4 and fail. Not tighter: Triton passes a
    # Python float argument (the softmax scale) and float literals (log2 e) as fp32, so a correct float64
    # kernel on an H100 (assets/results/calibration/top-rungs) was off by more than 1e-9, though well within gradcheck's
    # own tolerance; the interpreter keeps them in float64.
    dout = torch.randn(size, generator=gen, device=dev, dtype=torch.float64)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    got = torch.autograd.grad(Composed.apply(*leaves), leaves, dout)
    for name, g, want in zip(("dq", "dk", "dv"), got, backward_reference(q, k, v, dout, causal)):
        scale = float(want.abs().max())
        correctness.compare(g, want, rtol=1e-5, atol=1e-5 * scale,
                            what=f"{what}, {name} in float64 (every sum and every tile of P in float64: ACC = tl.float64)")


def check_backward_memory(attention_backward, sizes=MEMORY_SIZES) -> dict:
    """Exercise 6b: extra memory of a correct backward launch, causal and not, within the O(N) budget."""
    ok, reason = gpu_or_reason()
    if not ok:
        _require_backward_written(attention_backward)
        raise NoGPUError(f"no GPU: memory not measured for exercise 6b (attention backward). {reason}; the memory "
                         "cell scores 0 without a GPU. Correctness is still checked on the CPU.")
    found, lines = {}, []
    with captured_stderr() as err:
        try:
            for size in sizes:
                for causal in (False, True):
                    ex = BACKWARD_CAUSAL if causal else BACKWARD
                    fn = learner_for_backward(attention_backward, causal)
                    _one_backward(ex, fn, size, causal, "cuda")   # compiles and checks first
                    gen, _ = correctness.fresh_generator("cuda")
                    inputs = ex.make_inputs(size, gen, "cuda")
                    out = correctness.poison(ex.make_output(size, "cuda"))
                    torch.cuda.empty_cache()
                    try:
                        used = fn.peak_memory(*inputs, out)
                    except CheckFailed as exc:
                        if "OutOfMemoryError" in str(exc):
                            raise CheckFailed(f"6b memory, {describe(size)}: the GPU ran out of memory: {exc}",
                                              reason="memory") from None
                        raise
                    found[(size, causal)] = used
                    _require_linear_memory(
                        "6b memory: your backward", "its inputs and outputs", used, size, f"causal={causal!s:<5}",
                        f"causal={causal}", lines, "probabilities", "P (or dP, dS)",
                        "Recompute each tile of P from q, k and the saved lse inside the kernel that needs it.")
        except LadderError as exc:
            raise with_stderr(exc, err) from None
    print("✓ 6b memory: the backward's extra memory stays within the O(N) budget\n" + "\n".join(lines))
    return found


def _require_backward_written(attention_backward) -> None:
    """Without a GPU: a stub still says "not written yet" (one tiny launch through the interpreter)."""
    gen, _ = correctness.fresh_generator("cpu")
    size = (1, 1, 16, 16)
    with captured_stderr():
        try:
            launch(BACKWARD, learner_for_backward(attention_backward, False), BACKWARD.make_inputs(size, gen, "cpu"),
                   BACKWARD.make_output(size, "cpu"))
        except NotImplementedYet:
            raise not_written_yet(BACKWARD) from None
        except LadderError:
            pass


def check_backward_speed(attention_backward) -> SpeedResult:
    """Exercise 6b, speed: causal=False, D = 64, against autograd's backward through naive attention
    (its graph built once, outside the timing); torch SDPA's backward reported."""
    if not gpu_or_reason()[0]:
        _require_backward_written(attention_backward)
    _NAIVE_BACKWARDS.clear()
    try:
        return check_speed(BACKWARD, bind_backward(attention_backward, False), "6b")
    finally:
        _NAIVE_BACKWARDS.clear()
        if gpu_or_reason()[0]:
            torch.cuda.empty_cache()


# -------------------------------------------------------------------------------- plots

def plot_results(*results: SpeedResult | None):
    """Bar chart: TFLOP/s of your kernel beside naive torch and SDPA, under the fp16 matmul ceiling."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 6 on {gpu}")


def plot_fast(results: list | None):
    """Stretch 1b's four cases: your tuned forward's speedup over SDPA's FlashAttention backend (the bars),
    each case's pass bar (dashed), and SDPA left to choose its own backend (grey dots, where reported)."""
    import matplotlib.pyplot as plt

    results = [r for r in (results or []) if r is not None]
    if not results:
        print("Nothing to plot yet: run the stretch 1b cell on a GPU first.")
        return None
    fig, ax = plt.subplots(figsize=(10, 4))
    xs = range(len(results))
    ax.bar(xs, [r.speedup for r in results], color="tab:orange", label="yours")
    for i, r in enumerate(results):
        ax.text(i, r.speedup, f"{r.speedup:.2f}×", ha="center", va="bottom", fontsize=8)
        ax.hlines(r.bar, i - 0.4, i + 0.4, colors="black", linestyles="--", label="pass bar" if i == 0 else None)
        for name, ms in r.others.items():   # the same baseline left to choose its own kernel
            ax.plot(i, ms / r.ms, "o", color="tab:gray", label=name if i == 0 else None)
    ax.axhline(1.0, color="tab:blue", linewidth=1, label=f"{results[0].baseline_name} = 1")
    ax.set_xticks(list(xs), [r.title.replace("tuned attention forward, ", "") for r in results])
    ax.set_ylabel(f"speedup over {results[0].baseline_name}")
    ax.set_title(f"Stretch 1b on {results[0].gpu}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_scaling(attention, sizes=(512, 1024, 2048, 4096, 8192, 16384), batch_heads=(1, 16), d=64,
                 causal=False):
    """Time and extra memory against N: naive torch, yours and torch SDPA."""
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    if ungraded_timing_skipped("the sweep"):
        return None
    contenders = {"naive torch": lambda q, k, v, out: naive_attention(q, k, v, out, causal),
                  "yours": bind(attention, causal),
                  "torch SDPA": lambda q, k, v, out: sdpa(causal)(q, k, v)}
    times = {name: [] for name in contenders}
    memory = {name: [] for name in contenders}
    b, h = batch_heads
    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    with captured_stderr():
        for n in tqdm(sizes, desc="N"):
            size = (b, h, n, d)
            q, k, v = make_inputs(size, gen, "cuda")
            out = _empty(size, "cuda")
            for name, f in contenders.items():
                if name == "naive torch" and (NAIVE_BYTES_PER_SCORE + 2) * b * h * n * n > 0.7 * free_gpu_bytes():
                    times[name].append(float("nan"))
                    memory[name].append(float("nan"))
                    continue
                memory[name].append(extra_memory(f, (q, k, v), out) / 2**20)
                times[name].append(bench(lambda: f(q, k, v, out)))
            del q, k, v, out
            torch.cuda.empty_cache()
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4))
    floor = 0.01  # MiB: a log axis has no 0, so launches that allocate nothing are drawn here
    for name in contenders:
        ax_t.plot(sizes, times[name], marker="o", label=name)
        nothing = all(m == 0 for m in memory[name])
        ax_m.plot(sizes, [max(m, floor) for m in memory[name]], marker="o",
                  label=f"{name} (0 bytes: drawn at the bottom)" if nothing else name)
    ax_m.plot(sizes, [b * h * n * n * 2 / 2**20 for n in sizes], linestyle="--", color="gray",
              label="one fp16 score matrix")
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"N (B={b}, H={h}, D={d}, causal={causal})")
        ax.legend(fontsize=8)
    ax_t.set_ylabel("time (ms)")
    ax_m.set_ylabel("extra memory above inputs and output (MiB)")
    ax_t.set_title("time: all grow like N² (so do the FLOPs)")
    ax_m.set_title("memory: only naive grows like N²")
    fig.tight_layout()
    return fig


# Shared memory per block below which the solution's 128-row tiles at D = 128 do not fit: Triton needs
# 96 KiB for them with 3 stages on sm_75 (cross-compiled, tests/cuda/test_cross_arch.py), over a T4's
# 64 KiB. Every other architecture the course names has 99 KiB or more.
ROWS_128_AT_D128_BYTES = 96 * 1024


def tile_rows(head_dim: int) -> int:
    """Rows of Q per program for the solution's launch on this GPU: 128, or 64 at D = 128 on a GPU whose
    shared memory per block is too small for 128 (a T4). Without a GPU (the interpreter), 128."""
    arch = arch_here()
    if head_dim > 64 and arch is not None and arch.max_shared_per_block < ROWS_128_AT_D128_BYTES:
        return 64
    return 128


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="6.P", exercise="6", rung="naive_triton", beside="solution", binding="extra-memory-passes",
    next_rung="an online softmax over tiles of K and V, the scores kept on chip",
    choices=("an online softmax over tiles of K and V, the scores kept on chip", "16-byte loads",
             "a larger block for the softmax kernel", "skip the tiles above the diagonal"),
    why="The softmax kernel streams at 68% of DRAM peak, but what it streams is the N x N score matrix, "
        "written and read back: bytes attention does not need. FlashAttention never stores the scores "
        "(6% DRAM) and ran 8x faster.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
