"""An exercise is data plus a reference; these functions are the harness every chapter shares.

A chapter module defines `Exercise` values (inputs, output, float64 reference, torch baseline,
bytes moved) and thin `check_*` functions that notebook test cells call. The learner's code is
reached through one narrow interface: a launcher `fn(*inputs, out)` that writes its result into
`out`, a tensor the grader allocated.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from . import correctness, remote, timing
from .bars import bar_for
from .device import WHAT_STILL_WORKS, ceilings, gpu_info, gpu_or_reason
from .errors import CheckFailed, KernelCompileError, KernelLaunchError, LadderError, NoGPUError, NotImplementedYet
from .quiet import captured_stderr

_GRADER_DIR = str(Path(__file__).resolve().parent)

CEILING_NAMES = {"copy_gbps": "copy ceiling", "fp32_tflops": "fp32 matmul ceiling (torch.mm, TF32 off)",
                 "fp16_tflops": "fp16 matmul ceiling (torch.mm)"}


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
    baseline: Callable[..., object]          # torch's version, timed against the learner's
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

    def tolerance_for(self, size) -> tuple[float, float]:
        return self.tolerance(size) if self.tolerance else correctness.tolerance(self.dtype)


@dataclass
class CorrectnessResult:
    key: str
    sizes: list
    trials: int

    def __repr__(self) -> str:
        return f"<{self.key}: correct on {self.trials} trials>"


@dataclass
class SpeedResult:
    key: str
    title: str
    size: Any
    gpu: str
    comparison: timing.Comparison
    bar: float
    graded: bool
    passed: bool
    bytes_moved: int
    flops: int | None
    ceiling_name: str
    ceiling_value: float | None
    baseline_name: str
    others: dict[str, float] = field(default_factory=dict)       # name -> ms
    unavailable: dict[str, str] = field(default_factory=dict)    # name -> why not measured
    flags: list[str] = field(default_factory=list)               # for the instructor (implausible speed)

    @property
    def speedup(self) -> float:
        return self.comparison.speedup

    @property
    def ms(self) -> float:
        return self.comparison.candidate.median_ms

    @property
    def baseline_ms(self) -> float:
        return self.comparison.baseline.median_ms

    def gbps(self, ms: float | None = None) -> float:
        return self.bytes_moved / ((ms if ms is not None else self.ms) * 1e-3) / 1e9

    def tflops(self, ms: float | None = None) -> float:
        if not self.flops:
            raise ValueError(f"exercise {self.key} does not count FLOPs")
        return self.flops / ((ms if ms is not None else self.ms) * 1e-3) / 1e12

    @property
    def unit(self) -> str:
        return "TFLOP/s" if self.flops else "GB/s"

    def rate(self, ms: float | None = None) -> float:
        """Achieved TFLOP/s for FLOP-counted exercises, GB/s otherwise."""
        return self.tflops(ms) if self.flops else self.gbps(ms)

    def pct_of_ceiling(self, ms: float | None = None) -> float | None:
        return 100 * self.rate(ms) / self.ceiling_value if self.ceiling_value else None

    def _rate_text(self, ms: float | None = None) -> str:
        return f"{self.rate(ms):8,.1f} {self.unit}" if self.flops else f"{self.rate(ms):8,.0f} {self.unit}"

    def report(self) -> str:
        c = self.comparison
        mark = "✓" if self.passed else "✗"
        verdict = "passed" if self.passed else "below the bar"
        lines = [f"{mark} {self.key} speed, {self.title}: {verdict} "
                 f"(bar {self.bar:.2f}x {self.baseline_name}{'' if self.graded else ', not graded'})"]
        ceiling = ""
        if self.ceiling_value:
            what = CEILING_NAMES.get(self.ceiling_name, self.ceiling_name)
            ceiling = (f"  {self.pct_of_ceiling():4.0f}% of this GPU's {what} "
                       f"({self.ceiling_value:,.{1 if self.flops else 0}f} {self.unit})")
        lines.append(f"  {'yours':<16}{self.ms:9.3f} ms ±{100 * c.candidate.spread:4.1f}%"
                     f"  {self._rate_text()}{ceiling}")
        lines.append(f"  {self.baseline_name:<16}{self.baseline_ms:9.3f} ms ±{100 * c.baseline.spread:4.1f}%"
                     f"  {self._rate_text(self.baseline_ms)}")
        for name, ms in self.others.items():
            lines.append(f"  {name:<16}{ms:9.3f} ms         {self._rate_text(ms)}"
                         f"  (not graded; yours runs at {ms / self.ms:.2f}x its speed)")
        for name, why in self.unavailable.items():
            lines.append(f"  {name:<16}not measured: {why}")
        for flag in self.flags:
            lines.append(f"  ⚑ {flag}")
        lines.append(f"  speedup {self.speedup:.2f}x  ({self.size}; median of {c.rounds} interleaved rounds; "
                     f"{self.gpu})")
        return "\n".join(lines)


# --------------------------------------------------------------------------------- launching

def _learner_frames(exc: BaseException) -> str:
    """The learner's part of a traceback: frames outside the grader package."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_GRADER_DIR)]
    if not frames:
        return ""
    return "".join(traceback.format_list(frames[-4:]))


def _not_written_yet(ex: Exercise) -> NotImplementedYet:
    return NotImplementedYet(f"exercise {ex.key} ({ex.title}) is not written yet: write `{ex.signature}` "
                             f"and its kernel in {ex.where}, replacing `raise NotImplementedError()`.")


def launch(ex: Exercise, fn: Callable, inputs, out, device: str, noop: bool = False) -> None:
    """Call the learner's launcher once and wait for the GPU, turning every failure into a message."""
    try:
        with remote.launching(noop=noop):
            fn(*inputs, out)
    except LadderError as exc:
        if isinstance(exc, NotImplementedYet) and remote.is_remote(fn):  # the worker's general wording
            raise _not_written_yet(ex) from None
        raise
    except NotImplementedError:
        raise _not_written_yet(ex) from None
    except Exception as exc:
        where = _learner_frames(exc)
        raise CheckFailed(f"{ex.signature} raised {type(exc).__name__}: {exc}"
                          + (f"\nin your code:\n{where}" if where else ""), reason="raised") from None
    if device == "cuda":
        try:
            torch.cuda.synchronize()
        except Exception as exc:
            raise KernelLaunchError(
                f"{ex.key}: the kernel crashed while running: {str(exc).splitlines()[0]}\n"
                "Most often an index past the end of an array. The GPU context is now broken: restart the "
                "notebook kernel (Kernel > Restart) before running anything else on the GPU.", reason="crashed") from None


def _no_gpu(ex: Exercise, fn: Callable) -> NoGPUError:
    """On a machine without a GPU: still tell the learner whether the code is written and compiles."""
    reason = gpu_or_reason()[1]
    gen, _ = correctness.fresh_generator("cpu")
    size = ex.visible_sizes[0]
    status = ""
    try:
        launch(ex, fn, ex.make_inputs(size, gen, "cpu"), ex.make_output(size, "cpu"), "cpu")
    except NoGPUError as exc:  # raised by the kernel wrapper, after its NVRTC compile check
        status = f"\n{exc}"
    except (NotImplementedYet, KernelCompileError):
        raise
    except CheckFailed:  # the launcher needs GPU tensors: nothing more to learn on a CPU
        pass
    return NoGPUError(f"{reason}, so exercise {ex.key} ({ex.title}) was not run.{status}\n{WHAT_STILL_WORKS}")


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

def check_correctness(ex: Exercise, fn: Callable, sizes=None, trials: int = 2, device: str | None = None,
                      verbose: bool = True) -> CorrectnessResult:
    """Run `fn` on fresh random inputs for every size and trial; raise CheckFailed on the first problem."""
    dev = _correctness_device(ex, device)
    if sizes is None:
        sizes = ex.cpu_sizes if dev == "cpu" and ex.cpu_sizes and device is None else ex.visible_sizes
    sizes = list(sizes)
    with captured_stderr() as err:
        if dev is None:
            raise _no_gpu(ex, fn)
        try:
            for size in sizes:
                for trial in range(trials):
                    _one_trial(ex, fn, size, dev, f"{ex.key} {ex.title}, {ex.describe_size(size)}, "
                                                  f"trial {trial + 1} of {trials}")
        except LadderError as exc:
            raise _with_stderr(exc, err) from None
    if verbose:
        shown = ", ".join(ex.describe_size(s) for s in sizes)
        print(f"✓ {ex.key} {ex.title}: correct on {len(sizes) * trials} trials ({shown}); "
              "fresh random inputs each trial, output poisoned with NaN, inputs unchanged")
    return CorrectnessResult(ex.key, sizes, len(sizes) * trials)


def _one_trial(ex: Exercise, fn: Callable, size, dev: str, what: str) -> None:
    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    guard = correctness.guarded(ex.make_output(size, dev))
    _launch_and_verify(ex, fn, size, inputs, correctness.snapshot(inputs), guard.out, dev, what, guard)
    if remote.is_remote(fn) and not getattr(fn, "_probed", False):
        _require_kernel_does_work(ex, fn, size, dev, what)
        fn._probed = True


def _require_kernel_does_work(ex: Exercise, fn: Callable, size, dev: str, what: str) -> None:
    """Switch the learner's kernels off (launches become no-ops) and check that `out` stays untouched.

    Only possible when the launcher runs in the grader's worker, which controls kernel launches. A
    launcher whose output appears anyway got it from somewhere else: torch, CuPy, a cache.
    """
    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    guard = correctness.guarded(ex.make_output(size, dev))
    out = correctness.poison(guard.out)
    launch(ex, fn, inputs, out, dev, noop=True)
    guard.check(what + " (kernels switched off)")
    written = int((~torch.isnan(out)).sum()) if out.is_floating_point() else int((out != torch.iinfo(out.dtype).min).sum())
    if written:
        raise CheckFailed(f"{what}: with your kernels switched off (every launch made a no-op), {ex.signature} still "
                          f"wrote {written:,} of the {out.numel():,} elements of out. The result must come from your "
                          "kernel, not from torch, CuPy or results kept from earlier calls.", reason="kernel-unused")


def _launch_and_verify(ex: Exercise, fn: Callable, size, inputs, pristine, out, dev: str, what: str,
                       guard: correctness.Guarded | None = None) -> None:
    """Poison `out`, launch once, then check the guard bands, that the inputs are untouched, and that
    `out` matches the reference."""
    correctness.poison(out)
    launch(ex, fn, inputs, out, dev)
    _verify(ex, size, inputs, pristine, out, what, guard)


def _verify(ex: Exercise, size, inputs, pristine, out, what: str, guard: correctness.Guarded | None = None) -> None:
    """After a launch: the guard bands, untouched inputs, the output's dtype and its values."""
    if guard is not None:
        guard.check(what)
    correctness.require_unchanged(pristine, inputs, what, ex.arg_names)
    if out.dtype != ex.dtype:
        raise CheckFailed(f"{what}: the output is {out.dtype}, expected {ex.dtype}", reason="wrong-dtype")
    expected = ex.reference(*[t.to(torch.float64) for t in pristine])
    rtol, atol = ex.tolerance_for(size)
    correctness.compare(out, expected, rtol=rtol, atol=atol, what=what)


def _with_stderr(exc: LadderError, err) -> LadderError:
    text = err.summary()
    if text:
        exc.args = (f"{exc.args[0] if exc.args else exc}\n\nstderr during the check:\n{text}",)
    return exc


# ------------------------------------------------------------------------------------ speed

def measure_speed(ex: Exercise, fn: Callable, bar_key: str | None = None, device: str | None = None,
                  backend=None, size=None) -> SpeedResult:
    """Check correctness at the timing size, time `fn` against torch, and return the result (no verdict)."""
    bar = bar_for(bar_key or ex.key)
    dev = _device(device)
    with captured_stderr() as err:
        if dev is None:
            raise no_gpu_speed(ex) if ex.cpu_sizes else _no_gpu(ex, fn)
        try:
            return _measure(ex, fn, bar, dev, backend, size)
        except LadderError as exc:
            raise _with_stderr(exc, err) from None


def check_speed(ex: Exercise, fn: Callable, bar_key: str | None = None, device: str | None = None,
                backend=None, size=None, verbose: bool = True) -> SpeedResult:
    """Time `fn` against the exercise's torch baseline and compare the speedup with the pass bar.

    Graded bars raise CheckFailed when missed; an ungraded (stretch) bar only reports.
    """
    result = measure_speed(ex, fn, bar_key, device, backend, size)
    if not result.passed and result.graded:
        hint = f"\nHint: {ex.speed_hint}" if ex.speed_hint else ""
        raise CheckFailed(result.report() + f"\nNeeds at least {result.bar:.2f}x {ex.baseline_name}.{hint}",
                          reason="below-bar")
    if verbose:
        print(result.report())
    return result


def _measure(ex: Exercise, fn: Callable, bar, dev: str, backend, size) -> SpeedResult:
    size = size if size is not None else (ex.speed_size() if dev == "cuda" else ex.visible_sizes[-1])
    what = f"{ex.key} {ex.title} at the timing size, {ex.describe_size(size)}"
    # Correct at the timing size first: large sizes find overflowing indices.
    _one_trial(ex, fn, size, dev, what)

    gen, _ = correctness.fresh_generator(dev)
    inputs = ex.make_inputs(size, gen, dev)
    pristine = correctness.snapshot(inputs)
    guard = correctness.guarded(ex.make_output(size, dev))
    out = guard.out
    out_base = ex.make_output(size, dev)
    others, unavailable = {}, {}
    for name, factory in ex.others.items():
        try:
            other = factory()
            other(*inputs)  # compile and warm up outside the timed rounds
            others[name] = (lambda o=other: o(*inputs))
        except Exception as exc:  # reported only, never graded: say why and go on
            unavailable[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    baselines = {ex.baseline_name: ex.baseline, **ex.baseline_alternatives}
    for name, alt in ex.baseline_alternatives.items():
        others[name] = (lambda a=alt: a(*inputs, out_base))
    baseline = lambda: ex.baseline(*inputs, out_base)  # noqa: E731
    if remote.is_remote(fn):
        backend = backend or timing.BatchBackend(device=dev)
        sampler = _TimedSets(ex, size, dev, inputs, pristine, guard, what)
        candidate = fn.batch(sampler.argsets, after_batch=sampler.after_batch)
        sampler.poison_all()
        if remote.is_remote(ex.baseline):  # the learner's own code as the baseline: batched in the worker too
            baseline = ex.baseline.batch([tuple(inputs) + (out_base,)])
    else:
        backend = backend or (timing.BatchBackend() if dev == "cuda" else timing.CPUBackend())
        candidate = lambda: fn(*inputs, out)  # noqa: E731
    cmp = timing.compare(candidate, baseline,
                         others=others, backend=backend, baseline_name=ex.baseline_name)
    cmp = cmp.against_fastest_of(list(baselines))

    # The timed launches must have computed the answer: poison, run once more, check.
    _launch_and_verify(ex, fn, size, inputs, pristine, out, dev, what + " (after timing)", guard)

    ceil = ceilings() if dev == "cuda" else None
    info = gpu_info() if dev == "cuda" else None
    flags = _physical_limits(ex, size, cmp.candidate.median_ms, ceil, what)
    return SpeedResult(
        key=bar.key, title=ex.title, size=ex.describe_size(size), gpu=info.name if info else "CPU backend",
        comparison=cmp, bar=bar.bar, graded=bar.graded, passed=cmp.speedup >= bar.bar,
        bytes_moved=ex.bytes_moved(size), flops=ex.flops(size) if ex.flops else None, ceiling_name=ex.ceiling,
        ceiling_value=ceil.value(ex.ceiling) if ceil else None, baseline_name=cmp.baseline.name,
        others={n: t.median_ms for n, t in cmp.others.items()}, unavailable=unavailable, flags=flags)


# Beyond these multiples of a measured ceiling, a time is not physically possible on this GPU. The copy
# ceiling is close to the memory's peak; torch.mm reaches 60-75% of the tensor cores' peak.
LIMIT_FACTOR = {"copy_gbps": 1.15, "fp32_tflops": 2.0, "fp16_tflops": 2.0}


def _physical_limits(ex: Exercise, size, ms: float, ceil, what: str) -> list[str]:
    """Fail a time no kernel can reach on this GPU; flag one that beats the measured ceiling."""
    if ceil is None or ms <= 0:
        return []
    if ex.flops:
        rate, unit = ex.flops(size) / (ms * 1e-3) / 1e12, "TFLOP/s"
    else:
        rate, unit = ex.bytes_moved(size) / (ms * 1e-3) / 1e9, "GB/s"
    limit_value = ceil.value(ex.ceiling)
    if not limit_value:
        return []
    name = CEILING_NAMES.get(ex.ceiling, ex.ceiling)
    if rate > LIMIT_FACTOR.get(ex.ceiling, 2.0) * limit_value:
        raise CheckFailed(f"{what}: measured {rate:,.1f} {unit}, {rate / limit_value:.2f}x this GPU's {name} "
                          f"({limit_value:,.1f} {unit}). No kernel can go that fast here, so the timing cannot be "
                          "trusted: was the work really done during the timed calls?", reason="too-fast")
    if rate > limit_value:
        return [f"implausible: {rate:,.1f} {unit} beats this GPU's measured {name} ({limit_value:,.1f} {unit}); "
                "flagged for the instructor to look at"]
    return []


class _TimedSets:
    """Argument sets for timed batches in the worker, and secret sampled re-checks between batches.

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
        from .device import free_gpu_bytes
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
        if self.checked == 0 or self.rng.random() < 0.3:
            i = self.rng.randrange(min(reps, len(self.sets)))  # a set this batch wrote
            inputs, pristine, g = self.sets[i]
            _verify(self.ex, self.size, inputs, pristine, g.out, f"{self.what} (a timed call, re-checked)", g)
            gen, _ = correctness.fresh_generator(self.dev)
            for t, fresh in zip(inputs, self.ex.make_inputs(self.size, gen, self.dev)):
                t.copy_(fresh)
            for p, t in zip(pristine, inputs):
                p.copy_(t)
            self.checked += 1
        self.poison_all()



def check_stretch(ex: Exercise, fn: Callable, bar_key: str, sizes, names: str,
                  before_speed: Callable[[Callable], None] | None = None) -> SpeedResult | None:
    """A stretch goal: correctness on `sizes` is required, the speed bar (ungraded) only reports.

    Not attempted yet, or no GPU to time it on, is printed rather than raised, so that "Run All"
    carries on past an optional cell. `before_speed` runs extra checks (e.g. tensor cores) first.
    """
    try:
        check_correctness(ex, fn, sizes, trials=1)
    except NotImplementedError:
        print(f"Stretch goal not attempted yet: write {names} above to try it.")
        return None
    except NoGPUError as exc:
        print(str(exc))
        return None
    if before_speed is not None:
        before_speed(fn)
    return check_speed(ex, fn, bar_key)
