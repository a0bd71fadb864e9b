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

from . import correctness, timing
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


def launch(ex: Exercise, fn: Callable, inputs, out, device: str) -> None:
    """Call the learner's launcher once and wait for the GPU, turning every failure into a message."""
    try:
        fn(*inputs, out)
    except LadderError:
        raise
    except NotImplementedError:
        raise NotImplementedYet(f"exercise {ex.key} ({ex.title}) is not written yet: write `{ex.signature}` "
                                f"and its kernel in {ex.where}, replacing `raise NotImplementedError()`.") from None
    except Exception as exc:
        where = _learner_frames(exc)
        raise CheckFailed(f"{ex.signature} raised {type(exc).__name__}: {exc}"
                          + (f"\nin your code:\n{where}" if where else "")) from None
    if device == "cuda":
        try:
            torch.cuda.synchronize()
        except Exception as exc:
            raise KernelLaunchError(
                f"{ex.key}: the kernel crashed while running: {str(exc).splitlines()[0]}\n"
                "Most often an index past the end of an array. The GPU context is now broken: restart the "
                "notebook kernel (Kernel > Restart) before running anything else on the GPU.") from None


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
    _launch_and_verify(ex, fn, size, inputs, correctness.snapshot(inputs), ex.make_output(size, dev), dev, what)


def _launch_and_verify(ex: Exercise, fn: Callable, size, inputs, pristine, out, dev: str, what: str) -> None:
    """Poison `out`, launch once, then check the inputs are untouched and `out` matches the reference."""
    correctness.poison(out)
    launch(ex, fn, inputs, out, dev)
    correctness.require_unchanged(pristine, inputs, what, ex.arg_names)
    if out.dtype != ex.dtype:
        raise CheckFailed(f"{what}: the output is {out.dtype}, expected {ex.dtype}")
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
        raise CheckFailed(result.report() + f"\nNeeds at least {result.bar:.2f}x {ex.baseline_name}.{hint}")
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
    out = ex.make_output(size, dev)
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
    backend = backend or (timing.GPUBackend() if dev == "cuda" else timing.CPUBackend())
    cmp = timing.compare(lambda: fn(*inputs, out), lambda: ex.baseline(*inputs, out_base),
                         others=others, backend=backend, baseline_name=ex.baseline_name)
    cmp = cmp.against_fastest_of(list(baselines))

    # The timed launches must have computed the answer: poison, run once more, check.
    _launch_and_verify(ex, fn, size, inputs, pristine, out, dev, what + " (after timing)")

    ceil = ceilings() if dev == "cuda" else None
    info = gpu_info() if dev == "cuda" else None
    return SpeedResult(
        key=bar.key, title=ex.title, size=ex.describe_size(size), gpu=info.name if info else "CPU backend",
        comparison=cmp, bar=bar.bar, graded=bar.graded, passed=cmp.speedup >= bar.bar,
        bytes_moved=ex.bytes_moved(size), flops=ex.flops(size) if ex.flops else None, ceiling_name=ex.ceiling,
        ceiling_value=ceil.value(ex.ceiling) if ceil else None, baseline_name=cmp.baseline.name,
        others={n: t.median_ms for n, t in cmp.others.items()}, unavailable=unavailable)



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
