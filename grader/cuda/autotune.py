"""Correctness trials run one of an autotuned kernel's configurations, chosen by the trial, untimed.

Why: a correctness check asks whether the kernel computes the right thing, and timing every
configuration at every new shape tells it nothing. At chapter 5's hidden shapes that timing was most
of the grading time: each new (M, N, K) compiled and timed every configuration, 74.6 s for one hidden
cell on an H100 (assets/results/class-grading). It also let timing noise choose what was checked: the
configuration that happened to win at a shape was the only one whose result was compared.

So trial `pick` of a correctness check runs configuration number `pick` (modulo their count) among
those the learner's own pruning (`prune_configs_by`) keeps for these arguments. A check over several
shapes covers several configurations, the same ones on every run, in a learner's cell, in `ladder
check` and in `ladder grade`. A configuration this GPU cannot run (out of shared memory or registers,
a failed compile-time assertion) is passed over, as the autotuner passes it over, and the next one is
taken. Every other call (speed cells, timed batches, the learner's own calls) autotunes as the
learner's code asks. Triton's Autotuner takes its single configuration without timing it when it holds
one, in every Triton version the course supports: that is the hook used here, restored after the call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .launches import Launch

# Triton's own errors for a configuration this GPU cannot run; its autotuner skips these too.
_PASSED_OVER = ("OutOfResources", "CompileTimeAssertionFailure", "PTXASError")


def _autotuner_class():
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return None
    return Autotuner


def describe(config) -> str:
    """A configuration as a learner wrote it: its meta-parameters, then num_warps and num_stages."""
    values = {**getattr(config, "kwargs", {}),
              **{k: getattr(config, k, None) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}}
    return ", ".join(f"{k}={v}" for k, v in values.items() if v is not None and not (k == "num_ctas" and v == 1))


def _kept(tuner, launch: Launch) -> list:
    """The configurations the learner's own pruning keeps for this launch's arguments (all, if none)."""
    tuner.nargs = dict(zip(tuner.arg_names, launch.args))
    try:
        return list(tuner.prune_configs(dict(launch.kwargs))) or list(tuner.configs)
    finally:
        tuner.nargs = None


def configured_args(config, arg_names, args: tuple, kwargs: dict) -> tuple:
    """`args` as a launch with `config` would pass them. Triton's autotuner runs a configuration's `pre_hook`
    on the arguments just before it launches, and the hook may set what a compile specialises on: chapter 6's
    tuned forward sets its tensor descriptors' tile shapes there. Compiling a configuration without
    launching it (warm-up, cross-compiling) must do the same, or it compiles for the shapes the launcher left.
    The hook runs on copies of the dataclass arguments (Triton's TensorDescriptor is one), so the learner's
    own objects keep their state; tensors are passed as they are, as the autotuner passes them."""
    if getattr(config, "pre_hook", None) is None:
        return tuple(args)
    copies = tuple(dataclasses.replace(a) if dataclasses.is_dataclass(a) and not isinstance(a, type) else a
                   for a in args)
    config.pre_hook({**dict(zip(arg_names, copies)), **kwargs, **config.all_kwargs()})
    return copies


def compile_every_config(launch: Launch) -> int:
    """Compile, without running or timing anything, each configuration the learner's pruning keeps for
    this autotuned launch; how many compiled.

    Why: a check run ahead of its notebook on a GPU it shares with the student's other checks may not
    time (grader.cuda.sharing), so it stops where an autotuner would time its configurations. Compiling
    them needs no GPU to itself, and they land in the student's own Triton cache (grader.classgrade.task),
    where the same check, run alone when the notebook reaches it, finds them instead of compiling each
    one while it holds the GPU. A configuration that fails to compile is left for that run to meet.
    """
    autotuner = _autotuner_class()
    tuner = launch.kernel
    if autotuner is None or not isinstance(tuner, autotuner) or not hasattr(tuner.fn, "warmup"):
        return 0
    kwargs = {k: v for k, v in launch.kwargs.items() if k != "warmup"}   # warmup() sets its own
    compiled = 0
    for config in _kept(tuner, launch):
        try:
            args = configured_args(config, tuner.arg_names, launch.args, kwargs)
            tuner.fn.warmup(*args, **kwargs, **config.all_kwargs())
            compiled += 1
        except Exception:  # noqa: BLE001, S112 - out of resources and the like: the run alone reports it
            continue
    return compiled


def run_picked(launch: Launch, pick: int, used: list[str]) -> Any:
    """Run the autotuned `launch` with configuration `pick` (see the module's docstring); what it ran
    with is appended to `used` ("kernel: BLOCK_M=128, ..."), so that a wrong result can name it."""
    autotuner = _autotuner_class()
    tuner = launch.kernel
    if autotuner is None or not isinstance(tuner, autotuner) or len(tuner.configs) <= 1:
        return launch.proceed()
    configs = tuner.configs
    candidates = _kept(tuner, launch)
    start = pick % len(candidates)
    passed_over: list[str] = []
    try:
        for config in candidates[start:] + candidates[:start]:
            tuner.configs = [config]
            try:
                result = launch.proceed()
            except Exception as exc:
                if type(exc).__name__ not in _PASSED_OVER:
                    used.append(f"{launch.name}: {describe(config)}")
                    raise
                passed_over.append(f"{describe(config)} ({type(exc).__name__})")
                error = exc
                continue
            used.append(f"{launch.name}: {describe(config)}"
                        + (f"; passed over: {'; '.join(passed_over)}" if passed_over else ""))
            return result
        raise error
    finally:
        tuner.configs = configs
