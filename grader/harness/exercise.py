"""An exercise is data plus a reference; these functions are the harness every chapter shares.

A chapter module defines `Exercise` values (inputs, output, float64 reference, torch baseline,
bytes moved, the extra checks it needs) and thin `check_*` functions that notebook test cells
call. The learner's code is reached through the one seam of grader.calls.seam: a launcher
`fn(*inputs, out)` that writes its result into `out`, a tensor the grader allocated. The harness
never asks where that launcher runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .. import config
from ..cuda import clocks, sharing
from ..cuda.gpu import free_gpu_bytes, gpu_info, gpu_or_reason
from ..errors import CheckFailed, KernelCompileError, LadderError, NoGPUError, NotImplementedYet
from ..calls.rules import kernel_unused
from ..calls.seam import LearnerFunction, as_learner, own_kernel_work
from . import correctness, timing
from .bars import bar_for
from .ceilings import COPY_NAME, CopyCeiling, ceiling_fraction, ceilings
from .feasibility import not_gradable_here, settle
from .kernel_time import KernelTime
from .outputs import Packed
from .quiet import captured_stderr
from .results import CEILING_NAMES, CorrectnessResult, SpeedResult


class Requirement:
    """An extra check an exercise declares as data (tensor-core work, causal skipping): `check_speed`
    runs it before timing (`when = "before-speed"`) or after (`"after-speed"`), on a GPU, wherever
    the learner's function runs. A chapter subclasses it with its own numbers and verdict."""

    when = "before-speed"

    def check(self, ex: "Exercise", fn: LearnerFunction, label: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Exercise:
    key: str                       # "1a": the key in bars.toml and in reports
    title: str                     # "vector add"
    where: str                     # where in the notebook the learner writes it
    signature: str                 # "vector_add(a, b, out)"
    arg_names: tuple[str, ...]     # names of the inputs, for messages
    make_inputs: Callable[[Any, torch.Generator, str], tuple[torch.Tensor, ...]]
    make_output: Callable[[Any, str], torch.Tensor]
    reference: Callable[..., torch.Tensor]   # float64 inputs -> float64 result
    baseline: Callable[..., object]          # torch's version, timed against the learner's (or a LearnerFunction)
    baseline_name: str
    dtype: torch.dtype
    bytes_moved: Callable[[Any], int]        # the fewest bytes the operation must move
    visible_sizes: tuple
    speed_size: Callable[[], Any]            # size for timing, chosen for this GPU
    describe_size: Callable[[Any], str] = str
    ceiling: str = "copy_gbps"               # which measured ceiling the report compares with
    others: dict[str, Callable[[], Callable]] = field(default_factory=dict)  # reported, never graded
    speed_hint: str = ""
    # Matmul-like exercises: the FLOPs the operation needs. When set, reports give TFLOP/s against a
    # FLOP ceiling ("fp32_tflops", "fp16_tflops") instead of GB/s against the copy ceiling.
    flops: Callable[[Any], int] | None = None
    # (rtol, atol) for a size; None: the default for `dtype`. Long reductions need a looser atol.
    tolerance: Callable[[Any], tuple[float, float]] | None = None
    # Other ways torch can compute the same thing, signature like `baseline`: all are timed, and the
    # fastest of the baseline and these is the one the bar is measured against.
    baseline_alternatives: dict[str, Callable[..., object]] = field(default_factory=dict)
    # Sizes for machines without a GPU. Non-empty means the launcher also runs on CPU tensors
    # (Triton kernels under TRITON_INTERPRET=1): correctness is then checked fully on the CPU,
    # and speed is reported as not measured.
    cpu_sizes: tuple = ()
    # Extra checks around the speed check (tensor-core work before it, causal skipping after it).
    requirements: tuple[Requirement, ...] = ()
    # The launcher writes several outputs (chapter 7's `add_rmsnorm(x, residual, weight, out, residual_out)`):
    # `make_output` stacks them along a first dimension, and the learner's function receives the slices
    # out[0], out[1], ... in its place (grader.calls.seam: with_split_output).
    split_output: bool = False
    # torch's own result, computed in `dtype` from the same inputs (5b: eager's matmul, bias add and GELU,
    # each rounded to fp16). Where torch itself is further from the float64 reference than the tolerance,
    # the learner's answer may be as far off (correctness.compare's `torch_error`): a kernel that rounds
    # where torch rounds passes on every draw of inputs, not on most.
    as_torch_computes: Callable[..., torch.Tensor] | None = None
    # An allowance per output element, derived from the formats and computed from the float64 inputs, added to
    # the tolerance where an error cannot be bounded by one rtol and atol for every element (chapter 9's FP8
    # GEMM: the tensor cores' accumulator error scales with each element's sum of |products|, not its value).
    error_bound: Callable[..., torch.Tensor] | None = None
    # Several outputs of different dtypes (chapter 9's fp8 codes and fp32 scales): `make_output` is then
    # `outputs.allocate`, a byte buffer, the learner receives a typed view of each part in its place, and
    # `outputs.compare` judges them (grader.harness.outputs). `dtype` is the buffer's, torch.uint8.
    outputs: Packed | None = None

    def tolerance_for(self, size) -> tuple[float, float]:
        return self.tolerance(size) if self.tolerance else correctness.tolerance(self.dtype)

    def split(self, args: tuple) -> tuple:
        """What the learner's function receives for the harness's (*inputs, out): `out` itself, its stacked
        slices (`split_output`), or a view of each of its parts (`outputs`, sized by the first input)."""
        *inputs, out = args
        if self.outputs is not None:
            return (*inputs, *self.outputs.views(out, tuple(inputs[0].shape)))
        if self.split_output:
            return (*inputs, *out.unbind(0))
        return tuple(args)

    def unwritten(self, out: torch.Tensor, size) -> int:
        """Elements of `out` still holding the grader's poison."""
        if self.outputs is not None:
            return self.outputs.unwritten(out, size)
        return int(correctness.unwritten(out).sum())

    def output_numel(self, size, out: torch.Tensor) -> int:
        return self.outputs.numel(size) if self.outputs is not None else out.numel()


@dataclass(frozen=True)
class SmallSizes:
    """What `ladder check --sanitize` runs for a chapter: the launcher the notebook defines under
    `launcher`, checked for `exercise` at small edge-case sizes, once each (`trailing`: arguments the
    check adds, such as chapter 6's `causal`). A stretch goal that is not written yet is no problem."""
    exercise: Exercise
    launcher: str
    sizes: tuple
    trailing: tuple = ()
    stretch: bool = False


# --------------------------------------------------------------------------------- launching

def learner_for(ex: Exercise, fn) -> LearnerFunction:
    """The seam for the learner's launcher of `ex`, called as the exercise says (its output split)."""
    fn = as_learner(fn)
    return fn.with_split_output(ex.split) if (ex.split_output or ex.outputs) and not fn.split_output else fn


def not_written_yet(ex: Exercise) -> NotImplementedYet:
    return NotImplementedYet(f"exercise {ex.key} ({ex.title}) is not written yet: write `{ex.signature}` "
                             f"and its kernel in {ex.where}, replacing `raise NotImplementedError()`.")


def launch(ex: Exercise, fn: LearnerFunction, inputs, out, noop: bool = False, count: bool = False,
           record: bool = False, pick: int | None = None):
    """Call the learner's launcher once (it waits for the GPU and applies the rules); every failure
    is already a LadderError, and a stub is reworded to name the exercise. With `count`, the kernels
    run as instrumented copies: returns (grader.cuda.tccount.Tally, kernels that ran). With `record`,
    launches are recorded, never run: returns the CUDA kernels launched. `pick`: a correctness trial,
    in which an autotuned kernel runs its configuration number `pick`, untimed (grader.cuda.autotune)."""
    try:
        if count:
            return fn.count_tensor_cores(*inputs, out)
        if record:
            return fn.launches(*inputs, out)
        fn.call(*inputs, out, launcher=True, noop=noop, config_pick=pick)
    except NotImplementedYet:
        raise not_written_yet(ex) from None
    except CheckFailed as exc:
        if exc.reason == "raised":  # "vector_add(a, b, out) raised ...", whatever the learner named it
            exc.args = (exc.args[0].replace(f"`{fn.name}`", ex.signature, 1),)
        raise
    return None


def _no_gpu(ex: Exercise, fn: LearnerFunction) -> NoGPUError:
    """On a machine without a GPU: still tell the learner whether the code is written and compiles."""
    reason = gpu_or_reason()[1]
    gen, _ = correctness.fresh_generator("cpu")
    size = ex.visible_sizes[0]
    status = ""
    try:
        launch(ex, fn, ex.make_inputs(size, gen, "cpu"), ex.make_output(size, "cpu"))
    except NoGPUError as exc:  # raised by the kernel wrapper, after its NVRTC compile check
        status = f"\n{exc}"
    except (NotImplementedYet, KernelCompileError):
        raise
    except CheckFailed:  # the launcher needs GPU tensors: nothing more to learn on a CPU
        pass
    # What still works without a GPU is said once per notebook, by start() in the setup cell.
    return NoGPUError(f"{reason}, so exercise {ex.key} ({ex.title}) was not run.{status}\n"
                      "(What still works without a GPU: see the setup cell's output.)")


def _device(device: str | None) -> str | None:
    if device is not None:
        return device
    return "cuda" if gpu_or_reason()[0] else None


def _correctness_device(ex: Exercise, device: str | None) -> str | None:
    """Where correctness runs: the GPU, or the CPU for exercises that have a CPU mode."""
    dev = _device(device)
    if dev is None and ex.cpu_sizes:
        return "cpu"
    return dev


def no_gpu_speed(ex: Exercise) -> NoGPUError:
    return NoGPUError(f"no GPU: speed not measured for exercise {ex.key} ({ex.title}). {gpu_or_reason()[1]}; "
                      "a speed cell scores 0 without a GPU. Correctness is still checked on the CPU.")


# ------------------------------------------------------------------------------- correctness

def check_correctness(ex: Exercise, fn, sizes=None, trials: int = 2, device: str | None = None,
                      verbose: bool = True) -> CorrectnessResult:
    """Run `fn` on fresh random inputs for every size and trial; raise CheckFailed on the first problem."""
    fn = learner_for(ex, fn)
    dev = _correctness_device(ex, device)
    if sizes is None:
        sizes = ex.cpu_sizes if dev == "cpu" and ex.cpu_sizes and device is None else ex.visible_sizes
    sizes = list(sizes)
    with captured_stderr() as err:
        if dev is None:
            raise _no_gpu(ex, fn)
        try:
            # Shape i's trials run an autotuned kernel's configuration i (grader.cuda.autotune): a check
            # over several shapes covers several configurations, untimed, the same ones on every path.
            for index, size in enumerate(sizes):
                for trial in range(trials):
                    one_trial(ex, fn, size, dev, f"{ex.key} {ex.title}, {ex.describe_size(size)}, "
                                                 f"trial {trial + 1} of {trials}", pick=index)
        except LadderError as exc:
            raise with_stderr(exc, err) from None
    if verbose:
        shown = ", ".join(ex.describe_size(s) for s in sizes)
        print(f"✓ {ex.key} {ex.title}: correct on {len(sizes) * trials} trials ({shown}); "
              "fresh random inputs each trial, output poisoned with NaN, inputs unchanged")
    return CorrectnessResult(ex.key, sizes, len(sizes) * trials)


def one_trial(ex: Exercise, fn: LearnerFunction, size, dev: str, what: str, pick: int | None = None):
    """One verified launch on fresh inputs, then, once per learner function, the no-op probe. `pick`:
    see `launch`; None (the speed cells' own trials) lets an autotuner time its configurations."""
    for _ in range(2):
        gen, _ = correctness.fresh_generator(dev)
        inputs = ex.make_inputs(size, gen, dev)
        guard = correctness.guarded(ex.make_output(size, dev))
        launch_and_verify(ex, fn, size, inputs, correctness.snapshot(inputs), guard.out, what, guard, pick=pick)
        # A call whose autotuner timed every configuration says nothing of one call's device time, which timed
        # calls are held to (grader.calls.rules.enforce_work): one more verified call, tuned, says it.
        if not fn.last_facts.tuned:
            break
    if not fn.probed:
        require_kernel_does_work(ex, fn, size, dev, what, pick=pick)
        fn.probed = True


def require_kernel_does_work(ex: Exercise, fn: LearnerFunction, size, dev: str, what: str,
                             pick: int | None = None) -> None:
    """Switch the learner's kernels off (launches become no-ops) and check that `out` stays untouched.

    A launcher whose output appears anyway got it from somewhere else: torch, CuPy, a cache."""
    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    guard = correctness.guarded(ex.make_output(size, dev))
    out = correctness.poison(guard.out)
    launch(ex, fn, inputs, out, noop=True, pick=pick)
    guard.check(what + " (kernels switched off)")
    total = ex.output_numel(size, out)
    written = total - ex.unwritten(out, size)
    if written:
        raise kernel_unused(what, f"with your kernels switched off (every launch made a no-op), {ex.signature} "
                                  f"still wrote {written:,} of the {total:,} elements of its output.")


def launch_and_verify(ex: Exercise, fn: LearnerFunction, size, inputs, pristine, out, what: str,
                      guard: correctness.Guarded | None = None, count: bool = False, pick: int | None = None):
    """Poison `out`, launch once, then check the guard bands, that the inputs are untouched, and that
    `out` matches the reference. With `count`, returns what the tensor cores did (see `launch`)."""
    correctness.poison(out)
    counted = launch(ex, fn, inputs, out, count=count, pick=pick)
    try:
        verify(ex, size, inputs, pristine, out, what, guard)
    except CheckFailed as exc:
        ran = fn.last_facts.configs if pick is not None else []
        if ran and exc.args:   # which of the learner's configurations gave the wrong result
            exc.args = (f"{exc.args[0]}\n(Your autotuned kernel ran with {'; '.join(ran)}. Correctness checks "
                        "run your configurations in turn, one per shape, untimed, so each must be right.)",)
        raise
    return counted


def verify(ex: Exercise, size, inputs, pristine, out, what: str, guard: correctness.Guarded | None = None) -> None:
    """After a launch: the guard bands, untouched inputs, the output's dtype and its values."""
    if guard is not None:
        guard.check(what)
    correctness.require_unchanged(pristine, inputs, what, ex.arg_names)
    if out.dtype != ex.dtype:
        raise CheckFailed(f"{what}: the output is {out.dtype}, expected {ex.dtype}", reason="wrong-dtype")
    widened = [t.to(torch.float64) for t in pristine]
    expected = ex.reference(*widened)
    if ex.outputs is not None:
        ex.outputs.compare(ex.outputs.views(out, size), expected, size, what)
        return
    rtol, atol = ex.tolerance_for(size)
    torch_error = None
    if ex.as_torch_computes is not None:
        torch_error = (ex.as_torch_computes(*pristine).to(torch.float64) - expected).abs()
    bound = ex.error_bound(*widened) if ex.error_bound is not None else None
    correctness.compare(out, expected, rtol=rtol, atol=atol, what=what, torch_error=torch_error, bound=bound)


def counted_launch(ex: Exercise, fn: LearnerFunction, size, what: str, device: str = "cuda"):
    """One launch at `size` on fresh inputs with every kernel an instrumented copy that counts the
    multiply-adds its tensor cores perform (grader.cuda.tccount); returns (Tally, kernels that ran).

    The instrumented launch must give what the learner's own kernels give on the same inputs, within the
    exercise's tolerance, so that what was counted is the work that computes the output; it is not held to
    the float64 reference. Whether the product is right is the correctness cells' verdict: a kernel that
    sums in fp16 fails those, yet does its multiply-adds on the tensor cores all the same. Guard bands and
    untouched inputs are checked on both launches. `device` "cpu": Triton's interpreter counts instead
    (grader.cuda.interpreter)."""
    gen, _ = correctness.fresh_generator(device)
    inputs = ex.make_inputs(size, gen, device)
    pristine = correctness.snapshot(inputs)
    runs = []
    for count in (False, True):
        guard = correctness.guarded(ex.make_output(size, device))
        correctness.poison(guard.out)
        counted = launch(ex, fn, inputs, guard.out, count=count)
        label = f"{what} (instrumented)" if count else f"{what} (your kernels, for the instrumented run to match)"
        guard.check(label)
        correctness.require_unchanged(pristine, inputs, label, ex.arg_names)
        runs.append(guard.out)
    rtol, atol = ex.tolerance_for(size)
    correctness.compare(runs[1], runs[0], rtol=rtol, atol=atol,
                        what=f"{what}: the instrumented copy of your kernels against their own output")
    return counted


def with_stderr(exc: LadderError, err) -> LadderError:
    text = err.summary()
    if text:
        exc.args = (f"{exc.args[0] if exc.args else exc}\n\nstderr during the check:\n{text}",)
    return exc


# ------------------------------------------------------------------------------------ speed

def measure_speed(ex: Exercise, fn, bar_key: str | None = None, device: str | None = None,
                  backend=None, size=None) -> SpeedResult:
    """Check correctness at the timing size, time `fn` against torch, and return the result (no verdict)."""
    fn = learner_for(ex, fn)
    bar = bar_for(bar_key or ex.key)
    dev = _device(device)
    with captured_stderr() as err:
        if dev is None:
            raise no_gpu_speed(ex) if ex.cpu_sizes else _no_gpu(ex, fn)
        try:
            result = _measure(ex, fn, bar, dev, backend, size)
            why = "throttled" if result.throttled else "crowded" if result.crowded else None
            if why is not None:
                # Held down by heat or power while timed (grader.cuda.clocks), or timed beside another process that
                # computed on the GPU (grader.cuda.neighbours): measured once more, and reported as it then stands.
                first = result
                result = _measure(ex, fn, bar, dev, None, size)
                result.remeasured_from, result.remeasured_because = first.value, why
                if why == "crowded":
                    result.first_neighbours = "; ".join(n.describe() for n in first.neighbours.crowding[:4])
                if result.crowded:
                    result.flags.append("timed beside another process that computed on the GPU, twice: the ratio "
                                        "shares the GPU with it (the GPU line names it); flagged for the instructor")
            return result
        except LadderError as exc:
            raise with_stderr(exc, err) from None


def check_speed(ex: Exercise, fn, bar_key: str | None = None, device: str | None = None,
                backend=None, size=None, verbose: bool = True) -> SpeedResult | None:
    """Time `fn` against the exercise's torch baseline and compare the speedup with the pass bar.

    The exercise's requirements run first (and after, for "after-speed" ones) on a GPU. Graded bars
    raise CheckFailed when missed; an ungraded (stretch) bar only reports, and is left out whole (None)
    in the grader's own runs on a GPU, like every stretch goal (`stretch_left_out`)."""
    fn = learner_for(ex, fn)
    label = bar_key or ex.key
    gpu = _device(device) == "cuda"
    if gpu and not bar_for(label).graded and stretch_left_out(f"{label} {ex.title}, stretch goal"):
        return None
    if gpu:
        speed_check_ahead(f"{label}'s speed check")   # a check ahead on a small GPU stops before its large inputs
        _requirements(ex, fn, label, "before-speed")
    result = measure_speed(ex, fn, bar_key, device, backend, size)
    out_of_reach = not_gradable_here(label) if gpu else None
    if out_of_reach is not None:  # no correct kernel reaches this bar on this GPU: never a plain fail
        return settle(result, out_of_reach, verbose)
    if not result.passed and result.graded:
        hint = f"\nHint: {ex.speed_hint}" if ex.speed_hint else ""
        needs = result.describe_value(result.bar) if result.fraction is not None else \
            f"{result.bar:.2f}x {ex.baseline_name}"
        raise CheckFailed(result.report() + f"\nNeeds at least {needs}.{hint}", reason="below-bar")
    if gpu:
        _requirements(ex, fn, label, "after-speed")
    if verbose:
        print(result.report())
    return result


def _requirements(ex: Exercise, fn: LearnerFunction, label: str, when: str) -> None:
    for requirement in ex.requirements:
        if requirement.when == when:
            with captured_stderr() as err:
                try:
                    requirement.check(ex, fn, label)
                except LadderError as exc:
                    raise with_stderr(exc, err) from None


# A speed check ahead goes on to its untimed correctness trial at the timing size only on a GPU with at
# least this much memory: its inputs there (up to about 2 GiB with their guarded and pristine copies, for
# chapters 1 and 7) must not crowd out the checks beside it. Where it may, it stops before them.
ROOM_FOR_TIMING_INPUTS = 32 * 2**30


def speed_check_ahead(what: str) -> None:
    """At the start of a speed check. Alone on its GPU: nothing. Sharing it (grader.cuda.sharing): on a GPU with
    room (ROOM_FOR_TIMING_INPUTS), the check goes on to its correctness trial at the timing size, which compiles
    what the check run alone will need (an autotuned kernel: every configuration, untimed:
    grader.cuda.autotune.compile_every_config), and stops at the first timing; on a smaller GPU it stops now."""
    if not sharing.shared():
        return
    info = gpu_info()
    if info is None or info.memory_bytes < ROOM_FOR_TIMING_INPUTS:
        sharing.require_own_gpu(what)


def _measure(ex: Exercise, fn: LearnerFunction, bar, dev: str, backend, size) -> SpeedResult:
    speed_check_ahead(f"timing {ex.key}")
    size = size if size is not None else (ex.speed_size() if dev == "cuda" else ex.visible_sizes[-1])
    what = f"{ex.key} {ex.title} at the timing size, {ex.describe_size(size)}"
    # Correct at the timing size first: large sizes find overflowing indices. On a GPU shared with other
    # checks (grader.cuda.sharing) this compiles what the timing needs, and an autotuner stops it there.
    one_trial(ex, fn, size, dev, what)
    # Timed beside other checks, nothing below would be true: stop before the timing's own inputs.
    sharing.require_own_gpu(f"timing {ex.key}")

    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    pristine = correctness.snapshot(inputs)
    guard = correctness.guarded(ex.make_output(size, dev))
    out = guard.out
    out_base = ex.make_output(size, dev)
    others, unavailable = reported_beside(ex, inputs, dev)
    baselines = {ex.baseline_name: ex.baseline, **ex.baseline_alternatives}
    for name, alt in ex.baseline_alternatives.items():
        others[name] = (lambda a=alt: a(*inputs, out_base))
    # A copy-ceiling bar: the copy ceiling is one more contender of the same rounds, timed where torch's baseline
    # is (grader.harness.ceilings), and each round's fraction decides whether the verdict has settled.
    copy = CopyCeiling(dev) if bar.is_fraction else None
    if copy is not None:
        others[COPY_NAME] = copy
        settled = timing.clear_of(bar.bar, [COPY_NAME], scale=ex.bytes_moved(size) / copy.bytes)
    else:
        settled = timing.clear_of(bar.bar, list(baselines))
    backend = backend or (timing.BatchBackend(device=dev) if dev == "cuda" else timing.CPUBackend())
    sampler = _TimedSets(ex, size, dev, inputs, pristine, guard, what)
    candidate = fn.batch(sampler.argsets, after_batch=sampler.after_batch)
    sampler.poison_all()
    if isinstance(ex.baseline, LearnerFunction):  # the learner's own launcher as the baseline: batched too
        baseline = ex.baseline.batch([tuple(inputs) + (out_base,)])
    else:
        baseline = lambda: ex.baseline(*inputs, out_base)  # noqa: E731
    cmp = timing.compare(candidate, baseline, others=others, backend=backend, baseline_name=ex.baseline_name,
                         settled=settled)
    cmp = cmp.against_fastest_of(list(baselines))
    kernels = _traced(ex, fn, candidate, baseline, sampler, backend, cmp, what)

    # The timed launches must have computed the answer: poison, run once more, check.
    launch_and_verify(ex, fn, size, inputs, pristine, out, what + " (after timing)", guard)

    info = gpu_info() if dev == "cuda" else None
    fraction = run_gbps = None
    if copy is not None:
        copy_ms = cmp.others[COPY_NAME].median_ms
        fraction = ceiling_fraction(ex.bytes_moved(size), cmp.candidate.median_ms, copy.bytes, copy_ms)
        run_gbps = ceiling_value = copy.gbps(copy_ms)
        others.pop(COPY_NAME)   # its buffers (half a GiB on most GPUs) are freed here, not at the next check
        del copy
    else:
        ceil = ceilings() if dev == "cuda" else None
        ceiling_value = ceil.value(ex.ceiling) if ceil else None
    # Without a GPU nothing is physically bounded: the CPU backend only exercises the same arithmetic.
    flags = (_physical_limits(ex, size, cmp.candidate.median_ms, ceiling_value if dev == "cuda" else None, what,
                              run_gbps is not None)
             + candidate.trusted.flags())
    passed = (fraction if fraction is not None else cmp.speedup) >= bar.bar
    return SpeedResult(
        key=bar.key, title=ex.title, size=ex.describe_size(size), gpu=info.name if info else "CPU backend",
        comparison=cmp, bar=bar.bar, graded=bar.graded, passed=passed,
        bytes_moved=ex.bytes_moved(size), flops=ex.flops(size) if ex.flops and fraction is None else None,
        ceiling_name="copy_gbps" if fraction is not None else ex.ceiling, ceiling_value=ceiling_value,
        baseline_name=cmp.baseline.name,
        others={n: t.median_ms for n, t in cmp.others.items() if n != COPY_NAME}, unavailable=unavailable,
        flags=flags, kernels=kernels, timed_where=fn.timed_where, events_ms=candidate.trusted.events_ms(),
        integrity=candidate.trusted.integrity(), kind=bar.kind, fraction=fraction, run_copy_gbps=run_gbps,
        provisional=bar.provisional)


def _traced(ex: Exercise, fn: LearnerFunction, candidate, baseline, sampler: "_TimedSets", backend, cmp,
            what: str) -> KernelTime | None:
    """Two traced batches of the learner's calls after the timed rounds (and of a baseline that is the
    learner's own launcher): every kernel that ran must be theirs (judged as each batch returns), calls
    timed untraced must not have been much faster than the device was busy per call in them, their kernels
    must have done about the work they do in a checked call made right after them, and the report learns
    where each call's time went. Tracing after the timing, never during it, keeps it from moving the ratio.
    Without a GPU there is nothing to trace."""
    if getattr(backend, "device", None) != "cuda":
        return None
    kernels = _traced_pair(candidate, cmp.candidate.median_ms, backend, sampler,
                           f"{what}, `{fn.name}` (timed runs)")
    _against_a_warm_checked_call(ex, candidate, sampler, what)
    if isinstance(ex.baseline, LearnerFunction):
        _traced_pair(baseline, cmp.baseline.median_ms, backend, sampler,
                     f"{what}, your baseline {ex.baseline_name} (timed runs)")
    return kernels


def _against_a_warm_checked_call(ex: Exercise, batch, sampler: "_TimedSets", what: str) -> None:
    """One more verified call, on fresh inputs, right after the traced batches: the GPU's clock is where theirs
    was, so each of the learner's kernels must have done in the timed calls about the work it does here
    (Batch.enforce_warm_work). Fresh inputs, because nothing kept from earlier calls can answer them."""
    one_trial(ex, batch.fn, sampler.size, sampler.dev, f"{what} (a checked call after the timing)")
    facts = batch.fn.last_facts
    if not facts.tuned:
        batch.enforce_warm_work(own_kernel_work(facts))


def _traced_pair(batch, median_ms: float, backend, sampler: "_TimedSets", what: str) -> KernelTime:
    """Two traced batches as long as a timed one; the rule on the lesser busy time (at the SM clock read
    after each, grader.cuda.clocks), the report from the first."""
    reps = timing.reps_for(backend.target_ms, median_ms)
    times, mhz = [], []
    for _ in range(2):
        sampler.poison_all()
        backend.flush()
        times.append(KernelTime.from_batch(batch.traced_batch(reps), reps))
        state = clocks.read()
        if state.readable and state.sm_mhz:
            mhz.append(state.sm_mhz)
    sampler.poison_all()
    if times[0].note is None:
        batch.trusted.bound_by_trace(min(t.busy_ms for t in times), what, median_ms,
                                     traced_mhz=sum(mhz) / len(mhz) if mhz else None)
    return times[0]


# Beyond these multiples of a measured ceiling, a time is not physically possible on this GPU. The copy
# ceiling is close to the memory's peak; torch.mm reaches 60-75% of the tensor cores' peak.
LIMIT_FACTOR = {"copy_gbps": 1.15, "fp32_tflops": 2.0, "fp16_tflops": 2.0, "fp8_tflops": 2.0}


def _physical_limits(ex: Exercise, size, ms: float, limit_value: float | None, what: str,
                     in_run: bool = False) -> list[str]:
    """Fail a time no kernel can reach on this GPU; flag one that beats the measured ceiling (`limit_value`, of
    the exercise's `ceiling`; `in_run`: the copy ceiling measured in this run, not the cached one)."""
    if not limit_value or ms <= 0:
        return []
    if ex.flops and not in_run:
        rate, unit = ex.flops(size) / (ms * 1e-3) / 1e12, "TFLOP/s"
    else:
        rate, unit = ex.bytes_moved(size) / (ms * 1e-3) / 1e9, "GB/s"
    ceiling = "copy_gbps" if in_run else ex.ceiling
    name = CEILING_NAMES.get(ceiling, ceiling) + (", measured in this run" if in_run else "")
    if rate > LIMIT_FACTOR.get(ceiling, 2.0) * limit_value:
        raise CheckFailed(f"{what}: measured {rate:,.1f} {unit}, {rate / limit_value:.2f}x this GPU's {name} "
                          f"({limit_value:,.1f} {unit}). No kernel can go that fast here, so the timing cannot be "
                          "trusted: was the work really done during the timed calls?", reason="too-fast")
    if rate > limit_value:
        return [f"implausible: {rate:,.1f} {unit} beats this GPU's measured {name} ({limit_value:,.1f} {unit}); "
                "flagged for the instructor to look at"]
    return []


class _TimedSets:
    """Argument sets for timed batches, and secret sampled re-checks between batches.

    Calls in a batch rotate through the sets, so consecutive calls never see the same inputs; before
    each batch every output is poisoned again; after a batch, with a probability the learner's code
    cannot observe, one set chosen at random is verified in full (guard bands, inputs, values) and then
    refilled with fresh random inputs, so results cached from an earlier batch are wrong.
    """

    def __init__(self, ex: Exercise, size, dev: str, inputs, pristine, guard, what: str):
        import secrets

        self.ex, self.size, self.dev, self.what = ex, size, dev, what
        self.rng = secrets.SystemRandom()
        self.sets = [(list(inputs), list(pristine), guard)]
        set_bytes = sum(t.numel() * t.element_size() for t in inputs) + guard.out.numel() * guard.out.element_size()
        room = free_gpu_bytes() if dev == "cuda" else 1 << 34
        if room > 6 * set_bytes:
            gen, _ = correctness.fresh_generator(dev)
            more = ex.make_inputs(size, gen, dev)
            self.sets.append((list(more), correctness.snapshot(more), correctness.guarded(ex.make_output(size, dev))))
        self.checked = 0

    @property
    def argsets(self) -> list[tuple]:
        return [tuple(inp) + (g.out,) for inp, _, g in self.sets]

    def poison_all(self) -> None:
        for _, _, g in self.sets:
            correctness.poison(g.out)
        if self.dev == "cuda":
            torch.cuda.synchronize()

    def after_batch(self, reps: int) -> None:
        # Every set this batch wrote must hold no poison when the batch returns, after every batch, not only the
        # sampled ones: timed calls that leave part of `out` unwritten, or a reply that came before the calls'
        # results (written into the worker's connection by the learner's code), both leave it.
        for i in range(min(reps, len(self.sets))):
            left = self.ex.unwritten(self.sets[i][2].out, self.size)
            if left:
                raise CheckFailed(f"{self.what}: a wrong result: when a timed batch of {reps} calls returned, "
                                  f"{left:,} elements of `out` still held what the grader wrote before it. "
                                  "Every call must write its whole output before your function returns.",
                                  reason="wrong-result")
        if self.checked == 0 or self.rng.random() < 0.3:
            i = self.rng.randrange(min(reps, len(self.sets)))  # a set this batch wrote
            inputs, pristine, g = self.sets[i]
            verify(self.ex, self.size, inputs, pristine, g.out, f"{self.what} (a timed call, re-checked)", g)
            gen, _ = correctness.fresh_generator(self.dev)
            for t, fresh in zip(inputs, self.ex.make_inputs(self.size, gen, self.dev)):
                t.copy_(fresh)
            for p, t in zip(pristine, inputs):
                p.copy_(t)
            self.checked += 1
        self.poison_all()


def _left_out(what: str, how: str) -> bool:
    """True, after saying so, in the grader's own runs of a notebook (`ladder check`, `ladder grade`;
    config.GRADER_RUN) on a GPU."""
    if not (config.grader_run() and gpu_or_reason()[0]):
        return False
    print(f"{what}: {how} while the grader runs this notebook (it decides no score); run the cell in your "
          "notebook to see it.")
    return True


def ungraded_timing_skipped(what: str) -> bool:
    """True, after saying so, where an ungraded timing is left out: in the grader's own runs of a notebook
    on a GPU. A worked version's speed or a sweep decides no score, yet such timings were a third of a
    student's grading time on an H100 (chapter 6's tuned forward alone 53-62 s of 208-268 s:
    assets/results/class-grading), spent once per student; the learner sees them by running the cell in JupyterLab."""
    return _left_out(what, "not timed")


def stretch_left_out(what: str) -> bool:
    """True, after saying so, where a stretch goal is left out whole, its correctness too: in the grader's own
    runs of a notebook on a GPU. Its cell is not graded, and its correctness trials compile the learner's
    extra kernels: chapter 5's split-K and Hopper cells took 16 s of a student's grading on an H100, after
    their timing was already left out (assets/results/class-grading). The learner sees it by running the cell."""
    return _left_out(what, "not checked")


def reported_beside(ex: Exercise, inputs, dev: str) -> tuple[dict, dict]:
    """The exercise's `others` (timed beside the baseline, never graded), each compiled and warmed up
    here: ({name: call}, {name: why it is not measured}). They decide no score, so the grader's own runs
    on a GPU leave them out (see `ungraded_timing_skipped`): torch.compile's first call alone took
    seconds per student."""
    others, unavailable = {}, {}
    skipped = config.grader_run() and dev == "cuda"
    for name, factory in ex.others.items():
        if skipped:
            unavailable[name] = "not timed while the grader runs this notebook (it decides no score)"
            continue
        try:
            other = factory()
            other(*inputs)  # compile and warm up outside the timed rounds
            others[name] = (lambda o=other: o(*inputs))
        except LadderError as exc:   # the entry's own words: this torch or GPU lacks what it needs
            unavailable[name] = str(exc).splitlines()[0]
        except Exception as exc:  # reported only, never graded: say why and go on
            unavailable[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return others, unavailable


def check_stretch(ex: Exercise, fn, bar_key: str, sizes, names: str) -> SpeedResult | None:
    """A stretch goal: correctness on `sizes` is required, the speed bar (ungraded) only reports.

    Not attempted yet, or no GPU to time it on, is printed rather than raised, so that "Run All"
    carries on past an optional cell. The exercise's requirements apply as in `check_speed`."""
    fn = learner_for(ex, fn)
    if stretch_left_out(f"{ex.key} {ex.title}, stretch goal"):
        return None
    try:
        check_correctness(ex, fn, sizes, trials=1)
    except NotImplementedError:
        print(f"Stretch goal not attempted yet: write {names} above to try it.")
        return None
    except NoGPUError as exc:
        print(str(exc))
        return None
    return check_speed(ex, fn, bar_key)


def measure_version(ex: Exercise, fn, label: str, bar_key: str | None = None, size=None) -> SpeedResult | None:
    """Time a version that is not graded (a worked kernel, a rung below the exercise's) against the
    exercise's baseline and bar, print the report, and return the result for a plot. Never raises for
    being slow, not written yet or no GPU: those are printed, so that "Run All" carries on."""
    if ungraded_timing_skipped(label):
        return None
    try:
        result = measure_speed(ex, fn, bar_key, size=size)
    except NotImplementedError:
        print(f"{label}: not written yet, so not measured.")
        return None
    except CheckFailed as exc:  # no GPU, or a version that is not right yet: said, never graded
        print(f"{label}: not measured.\n{exc}")
        return None
    result.key = label
    print(f"{label}:\n{result.report()}")
    return result
