"""The one seam between the grader's checks and the learner's function.

Every check reaches the learner's launcher through a `LearnerFunction`, wherever that launcher
runs, and nothing but this module and grader.isolation asks where. Its operations:

- `call(*args, noop=...)`: one call (a launcher writes into the grader's `out`); the rules of
  grader.calls.rules are enforced on what it did before the result is returned;
- `batch(argsets, after_batch)`: timed batches of calls, for the timing backend, with sampled re-checks,
  and one traced batch (grader.cuda.trace) for the speed report;
- `launches(*args)`: the CUDA kernels a call would launch (recorded, never run);
- `count_tensor_cores(*args)`: a call whose kernels run as instrumented copies that count their MMAs;
- `peak_memory(*args)`: the bytes a call allocates beyond what was allocated before it;
- `with_trailing(*extra)`: the same launcher with arguments appended, e.g. chapter 6's `causal`, so
  that a baseline built from the learner's own launcher runs wherever the launcher runs;
- `with_split_output()`: the same launcher, handed the grader's stacked `out` as its slices
  `out[0], out[1], ...` (chapter 7's `add_rmsnorm(x, residual, weight, out, residual_out)`), so that
  every check still sees one output tensor, its guard bands and its poison.

Two implementations: `LocalFunction`, the learner's function in this process (a notebook cell,
`ladder check`), and `RemoteFunction` (grader.isolation.remote), a stand-in for a function that runs
in the grader's worker (`ladder grade`). Both gather the same facts (grader.calls.facts) and apply
the same rules, here, in the base class. `as_learner(fn)` gives the seam for whatever a check was
handed: a RemoteFunction as it is, a plain function wrapped in a LocalFunction.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
from typing import Callable

from .. import config
from ..cuda import sharing
from ..cuda.gpu import has_gpu
from ..errors import CheckFailed, KernelLaunchError
from ..learner.errors import translate
from . import facts as gather
from . import rules
from .contender import Contender
from .messages import BatchFacts, CallPolicy, Facts, RecordedKernel
from .trusted import Overhead, TrustedTiming, clean_request_ms

# This process's clock, taken when the grader is imported: in the verifier, which runs no learner code,
# and in a notebook, in its setup cell, before the answers. The time a verdict rests on is read from it
# (grader.calls.trusted).
NOW = time.perf_counter


def shape_key(args) -> tuple:
    """What a launcher may legitimately branch on: tensor shapes, dtypes and devices, other values."""
    key = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            key.append(("tensor", tuple(a.shape), str(a.dtype), str(getattr(a, "device", ""))))
        else:
            key.append(("value", repr(a)))
    return tuple(key)


def own_kernel_work(facts: Facts) -> dict[str, tuple[float, int]] | None:
    """Each of the learner's own kernels in a traced call or batch: (device time in microseconds, thread blocks
    run), summed over its launches; None untraced."""
    device = facts.device
    if device is None or not device.traced:
        return None
    return {op.name: (op.total_us, op.blocks) for op in device.kernels() if facts.own_launches.get(op.name)}


def _stacked_slices(args: tuple) -> tuple:
    return tuple(args[:-1]) + tuple(args[-1].unbind(0))


class LearnerFunction:
    """The learner's launcher as every check sees it. Subclasses say how a call and a batch run."""

    def __init__(self, name: str, trailing: tuple = ()):
        self.name, self.__name__, self.trailing = name, name, tuple(trailing)
        self.last_facts = Facts()
        # (shapes of the arguments, names of the kernels launched, each own kernel's device time and thread blocks
        # where the call was traced and did the work: own_kernel_work) for every launcher call, no-op probes
        # included: what a call on inputs of a given shape launches, and how much its kernels do.
        self.history: list[tuple[tuple, frozenset, dict | None]] = []
        self.probed = False   # the no-op probe ran on this function
        # Torch may compute on the grader's tensors: only for the course's own comparisons (a learner's
        # kernel followed by torch's epilogue), never for a learner's graded launcher.
        self.torch_ops = False
        # How the last argument `out` goes to the learner (with_split_output): None, as it is.
        self.split_output: Callable[[tuple], tuple] | None = None

    # -- what a subclass provides
    def _run(self, args: tuple, kwargs: dict, policy: CallPolicy):
        """One call: (result, Facts). Raises a LadderError for anything the learner's code raised."""
        raise NotImplementedError

    def _bind(self, argsets: list[tuple]):
        """Prepare timed batches over `argsets`; returns what `_timed` needs."""
        raise NotImplementedError

    def _timed(self, bound, reps: int, traced: bool = False) -> BatchFacts:
        raise NotImplementedError

    def _overhead(self, argsets: list[tuple]) -> Overhead:
        """What this process can vouch for about a timed request's fixed cost (grader.calls.trusted)."""
        raise NotImplementedError

    # What the process that times the learner's calls can and cannot see: one line in every speed report.
    timed_where = ""

    @property
    def process_id(self) -> int:
        """The process the learner's calls run in: one of those a timing expects on the GPU
        (grader.cuda.neighbours)."""
        return os.getpid()

    def _twin(self, trailing: tuple) -> "LearnerFunction":
        """The same function with other trailing arguments."""
        raise NotImplementedError

    # -- what every check uses
    def _bound(self, trailing: tuple) -> "LearnerFunction":
        twin = self._twin(trailing)
        twin.history, twin.torch_ops, twin.split_output = self.history, self.torch_ops, self.split_output
        return twin

    def with_split_output(self, split: Callable[[tuple], tuple] | None = None) -> "LearnerFunction":
        """This launcher called with the output's parts in place of the output itself: `split(args)` gives
        the arguments (an exercise's `split`); by default the stacked output's slices out[0], out[1], ..."""
        twin = self._bound(self.trailing)
        twin.split_output = split or _stacked_slices
        return twin

    def arguments(self, args: tuple) -> tuple:
        """The arguments the learner's function receives for the harness's `fn(*inputs, out)`: the
        output split into its parts where asked (views of the grader's tensor: no copy), then the
        trailing arguments."""
        if self.split_output is not None and args:
            args = self.split_output(tuple(args))
        return tuple(args) + self.trailing

    def with_trailing(self, *extra) -> "LearnerFunction":
        """This launcher with `extra` appended to every call's arguments (chapter 6's `causal`)."""
        return self._bound(self.trailing + tuple(extra))

    def base(self) -> "LearnerFunction":
        """This launcher without the trailing arguments `with_trailing` added."""
        return self._bound(()) if self.trailing else self

    def call(self, *args, launcher: bool = False, noop: bool = False, config_pick: int | None = None,
             _policy: CallPolicy | None = None, **kwargs):
        """One call. `launcher`: it is a kernel launcher, and the launcher rules apply (a kernel must run,
        torch may not compute); `noop`: every kernel launch is skipped; `config_pick`: a correctness
        trial, in which an autotuned kernel runs that one configuration (grader.cuda.autotune)."""
        policy = _policy or CallPolicy(launcher=launcher, noop=noop, config_pick=config_pick)
        # Whether the check shares its GPU is the check's (grader.cuda.sharing); each call is told so.
        policy = dataclasses.replace(policy, shared_gpu=sharing.shared())
        what = f"`{self.name}`"
        args = self.arguments(args)
        result, facts = self._run(args, kwargs, policy)
        self.last_facts = facts
        rules.enforce(facts, what, launcher=policy.launcher, torch_ops=self.torch_ops)
        if policy.launcher and not policy.record:
            self.history.append((shape_key(args), frozenset(facts.launches),
                                 None if policy.noop or facts.tuned else own_kernel_work(facts)))
        return result

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def launches(self, *args) -> list[RecordedKernel]:
        """The CUDA kernels made with load_kernel that this launcher launches (recorded, never run).
        Not judged as a launcher's call: nothing ran, and the caller says what no kernel means."""
        self.call(*args, _policy=CallPolicy(record=True))
        return self.last_facts.recorded

    def count_tensor_cores(self, *args):
        """Call with every kernel replaced by an instrumented copy; returns its grader.cuda.tccount.Tally
        (what the tensor cores did, kernel by kernel) and the names of the kernels that ran."""
        from ..cuda.tally import Tally

        self.call(*args, _policy=CallPolicy(launcher=True, count_tensor_cores=True))
        return self.last_facts.tensor_cores or Tally(), list(self.last_facts.launches)

    def peak_memory(self, *args) -> int:
        """Bytes the call allocated above what the process held before it (torch's allocator)."""
        self.call(*args, _policy=CallPolicy(launcher=True, memory=True))
        return int(self.last_facts.peak_bytes or 0)

    def batch(self, argsets: list[tuple], after_batch=None) -> "Batch":
        return Batch(self, argsets, after_batch)


class Batch(Contender):
    """Learner calls timed in batches where the learner's function runs, checked by the same rules.

    `timed_batch(reps)` asks for `reps` calls in a row (rotating through the argument sets) and returns
    the time this process's own clock saw for the request, less what the same request with zero calls
    costs: the figure a verdict rests on. `trusted` (grader.calls.trusted.TrustedTiming) keeps every
    request and judges the CUDA events the running process recorded around the calls (the second after a
    device-wide synchronize, so work on any stream is inside) against it. Every timed call must launch every
    kernel a checked call of the same shape launched; `after_batch` re-checks a sample.
    """

    def __init__(self, fn: LearnerFunction, argsets: list[tuple], after_batch=None):
        self.fn, self.after_batch = fn, after_batch
        self.argsets = [fn.arguments(tuple(a)) for a in argsets]
        # The kernels every checked call on inputs of this shape launched (the checked call before
        # timing and the no-op probe): each timed call must launch them too. A call that launches
        # only some of them, say a fingerprint kernel that finds a kept result, skipped the work.
        same = [(names, work) for key, names, work in fn.history if self.argsets and key == shape_key(self.argsets[0])]
        self.required = frozenset.intersection(*(names for names, _ in same)) if same else frozenset()
        # Per required kernel, the least device time and thread blocks it took in a checked call of this shape:
        # a timed call that launches it on fewer blocks, or for a small fraction of that time, launched it on a
        # part of the work (one tile, say) and took the rest from somewhere else (rules.enforce_work).
        self.checked: dict[str, tuple[float, int]] = {}
        for _, work in same:
            for name, (us, blocks) in (work or {}).items():
                if name in self.required:
                    low = self.checked.get(name, (us, blocks))
                    self.checked[name] = (min(low[0], us), min(low[1], blocks))
        self.bound = fn._bind(self.argsets)
        self.trusted = TrustedTiming(fn._overhead(self.argsets), on_gpu=has_gpu())
        self.traced_work: list[tuple[dict | None, int]] = []   # per traced batch: own_kernel_work, and its calls
        self.batches = 0

    @property
    def process_id(self) -> int:
        return self.fn.process_id

    @property
    def last_round_ms(self) -> float | None:
        return self.trusted.last_round_ms

    def timed_batch(self, reps: int) -> float:
        """Milliseconds for `reps` calls, as this process measured them (grader.calls.trusted)."""
        what = f"`{self.fn.name}` (timed runs)"
        self._empty_request(what)
        facts, wall_ms = self._request(reps, traced=False, what=what)
        request = self.trusted.add(reps, wall_ms, facts.event_ms)
        self._after(reps)
        return request.trusted_ms

    def note_round(self, ms_per_call: float) -> None:
        self.trusted.end_round(ms_per_call, f"`{self.fn.name}` (timed runs)")

    def note_clock(self, state) -> None:
        self.trusted.note_clock(state)

    def traced_batch(self, reps: int) -> BatchFacts:
        """One batch with the device traced: what ran and for how long, for the speed report and the
        kernel rules. Its time makes no verdict (tracing slows the device; grader.cuda.trace)."""
        what = f"`{self.fn.name}` (timed runs)"
        facts, _ = self._request(reps, traced=True, what=what)
        work = own_kernel_work(facts)
        rules.enforce_work(work, self.checked, reps, what)
        self.traced_work.append((work, reps))
        self._after(reps)
        return facts

    def enforce_warm_work(self, reference: dict[str, tuple[float, int]] | None) -> None:
        """The traced batches' kernels against `reference`, the own kernels' work in a checked call made right
        after them on fresh inputs (own_kernel_work): per call, as many thread blocks and at least
        WARM_WORK_FRACTION of the device time (rules.enforce_work). Only the kernels every checked call of this
        shape launched are compared, as in `traced_batch`."""
        if not reference:
            return
        what, against = f"`{self.fn.name}` (timed runs)", "a checked call on fresh inputs right after them"
        required = {name: work for name, work in reference.items() if name in self.required}
        for work, reps in self.traced_work:
            rules.enforce_work(work, required, reps, what, fraction=rules.WARM_WORK_FRACTION, reference=against)
            # And all their kernels together: work moved into kernels that only some calls launch (so that none
            # of them is required) is still work the warm call did and the timed calls did not.
            rules.enforce_total_work(work, reference, reps, what, against)

    def _empty_request(self, what: str) -> None:
        """The same request with zero calls, timed just before: its cost is what the next request's wall
        time holds besides the calls (sending, copies, facts, the reply)."""
        facts, wall_ms = self._timed_request(0, False)
        self.trusted.note_empty(wall_ms)
        rules.enforce(facts, what, launcher=False)

    def _request(self, reps: int, traced: bool, what: str) -> tuple[BatchFacts, float]:
        facts, wall_ms = self._timed_request(reps, traced)
        rules.enforce_batch(facts, what, reps, self.required, wall_ms, torch_ops=self.fn.torch_ops)
        return facts, wall_ms

    def _timed_request(self, reps: int, traced: bool) -> tuple[BatchFacts, float]:
        """One request and this process's clock around it. No garbage collection inside (the worker holds
        it off until its reply is sent, grader.isolation.worker): a batch's calls leave thousands of objects
        behind, and the full collection they set off on a large heap took milliseconds, which an empty
        request never pays; timeit and torch.utils.benchmark leave it out for the same reason."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            t0 = NOW()
            facts = self.fn._timed(self.bound, reps, traced)
            return facts, (NOW() - t0) * 1e3
        finally:
            if collecting:
                gc.enable()

    def _after(self, reps: int) -> None:
        self.batches += 1
        if self.after_batch is not None:
            self.after_batch(reps)


# ----------------------------------------------------------------------------- in this process

_NOTED = False


def _note_once() -> None:
    """The one thing a check in the notebook's own process cannot promise, said once per process."""
    global _NOTED
    if not _NOTED and not config.quiet_start():
        _NOTED = True
        print("(Checked in this notebook's process by the same rules as grading. Grading repeats every check in "
              "a fresh process, where nothing this notebook changed can reach the verdict.)")


class LocalFunction(LearnerFunction):
    """The learner's function, called in this process."""

    timed_where = ("in this notebook's process, by its own clock less each request's measured overhead: code in "
                   "this notebook that rewrites the grader's clocks here could fool this check, never your grade, "
                   "which times every batch from a separate process your code does not run in")

    def __init__(self, fn, name: str | None = None, trailing: tuple = ()):
        super().__init__(name or getattr(fn, "__name__", "your function"), trailing)
        self.fn = fn

    def __repr__(self) -> str:
        return f"<your {self.name}>"

    def _twin(self, trailing: tuple) -> "LocalFunction":
        return LocalFunction(self.fn, self.name, trailing)

    def _run(self, args, kwargs, policy):
        _note_once()
        try:
            return gather.run_call(self.fn, args, kwargs, policy)
        except gather.LearnerRaised as raised:
            raise translate(raised.exc, f"`{self.name}`") from None
        except gather.GPUBroken as exc:
            raise KernelLaunchError(f"`{self.name}`: {exc}\nMost often an index past the end of an array. The GPU "
                                    "context of this notebook is now broken: restart its kernel (Kernel > Restart) "
                                    "before running anything else on the GPU. `ladder check --sanitize` names the "
                                    "kernel and line.", reason="crashed") from None

    def _bind(self, argsets):
        return argsets

    def _overhead(self, argsets) -> Overhead:
        """In this process nothing is copied; an empty batch of the grader's own, timed here, stands for the
        request's fixed cost, with the GPU's synchronizations and events where there is one. (Here the learner's
        code shares the process: a claim, like every figure.)"""
        samples = []
        for _ in range(4):
            t0 = NOW()
            gather.run_batch(None, [()], {}, 0)
            samples.append((NOW() - t0) * 1e3)
        return Overhead(clean_ms=clean_request_ms(samples))

    def _timed(self, bound, reps, traced=False):
        try:
            return gather.run_batch(self.fn, bound, {}, reps, traced=traced)
        except gather.LearnerRaised as raised:
            raise translate(raised.exc, f"`{self.name}` (timed runs)") from None
        except gather.GPUBroken as exc:
            raise KernelLaunchError(f"`{self.name}` (timed runs): {exc}", reason="crashed") from None


def as_learner(fn, name: str | None = None, torch_ops: bool = False) -> LearnerFunction:
    """The seam for what a check was handed: the learner's function, or a stand-in for one.
    `torch_ops`: a comparison of the course's own in which torch computes part of the result."""
    if isinstance(fn, LearnerFunction):
        return fn
    # What the learner's cells replaced decides the verdict before anything else, as the verifier
    # decides it right after loading them: a check that would stop early (no GPU, a stub) says the same.
    replaced = gather.tampered()
    if replaced:
        raise rules.tampered(replaced)
    if not callable(fn):
        raise CheckFailed(f"expected your function, got {type(fn).__name__}: {fn!r}"[:300])
    local = LocalFunction(fn, name)
    local.torch_ops = torch_ops
    return local
