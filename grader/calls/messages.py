"""What crosses between the grader's processes, as typed data.

The verifier sends the worker requests (`Prepare`, `Load`, `Describe`, `Call`, `Bind`, `Batch`, `Quit`);
the worker answers each with one reply (`Prepared`, `Loaded`, `Described`, `Called`, `Bound`, `Batched`)
or a `Failed`, and nothing else: `REPLIES` says which reply each request takes. What the learner's code did during a call travels as `Facts`; the in-process path
(grader.calls.seam) gathers the very same `Facts`, and grader.calls.rules judges them the same
way on both paths. The verifier's verdict on a test cell goes back to `ladder grade` as a `Verdict`.

The verifier unpickles the worker's replies with a short list of allowed classes (grader.isolation.
remote.safe_loads): these dataclasses, plain data, tensors and arrays. None of them runs code when
it is loaded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..cuda.tally import Tally

if TYPE_CHECKING:  # a name for an annotation; replies carry DeviceTrace values (remote's allow-list names it)
    from ..cuda.trace import DeviceTrace
from ..learner.code import KernelOutcome


@dataclass
class CallPolicy:
    """How one call of the learner's function is run and judged."""
    launcher: bool = False             # a kernel launcher: it must launch a kernel, and torch may not compute
    noop: bool = False                 # every kernel launch is skipped (the no-op probe)
    record: bool = False               # launches are recorded, never run (chapter 4's inspection)
    count_tensor_cores: bool = False   # kernels run as instrumented copies that count their MMAs
    memory: bool = False               # measure the peak memory the call allocates
    # A correctness trial: an autotuned kernel runs its configuration number config_pick, untimed
    # (grader.cuda.autotune says why). None: the autotuner times its configurations as usual.
    config_pick: int | None = None
    # The check shares its GPU with other checks (grader.cuda.sharing): an autotuner may not time its
    # configurations, and the call's facts say it would have (Facts.needs_own_gpu).
    shared_gpu: bool = False


@dataclass(frozen=True)
class RecordedKernel:
    """A CUDA kernel a launcher launched while launches were recorded: enough to compile it again."""
    name: str
    source: str
    options: tuple[str, ...]
    where: str | None


@dataclass
class Facts:
    """What the learner's code did during one call, gathered in the process that ran it."""
    launches: list[str] = field(default_factory=list)      # kernels launched, in order, by name
    errors: list[str] = field(default_factory=list)        # kernel errors raised to the learner's code
    ops: list[str] = field(default_factory=list)           # torch ops that computed on the grader's tensors
    stray_threads: list[str] = field(default_factory=list)  # threads still running when the call returned
    stray_processes: list[str] = field(default_factory=list)  # processes it started, still running when it returned
    tampered: list[str] = field(default_factory=list)      # attributes of torch, Triton, clocks, grader replaced
    l2_limit: int = 0                                      # persisting L2 cache reserved, in bytes
    not_plain: str | None = None                           # the type of a result that is not plain data
    retyped: list[str] = field(default_factory=list)       # tensors handed over whose dtype the call changed
    peak_bytes: int | None = None                          # with CallPolicy.memory
    tensor_cores: Tally | None = None                      # with CallPolicy.count_tensor_cores
    recorded: list[RecordedKernel] = field(default_factory=list)   # with CallPolicy.record
    configs: list[str] = field(default_factory=list)       # with CallPolicy.config_pick: what each autotuned launch ran
    tuned: bool = False                                    # an autotuner timed its configurations in this call
    needs_own_gpu: str = ""                                # with CallPolicy.shared_gpu: what would have timed
    # Device-side accounting (grader.cuda.trace, grader.calls.foreign): the learner's own kernel
    # launches that ran, by name; Triton kernels launched from installed packages (not the learner's
    # cells or files); and what the device executed, or why it was not traced.
    own_launches: dict[str, int] = field(default_factory=dict)
    package_launches: list[str] = field(default_factory=list)
    device: DeviceTrace | None = None


@dataclass
class BatchFacts(Facts):
    """What a batch of timed calls did, and its times."""
    min_launches: int = 0                                  # the fewest kernels any one call launched
    event_ms: float = 0.0                                  # between CUDA events (the host clock on a CPU)
    host_ms: float = 0.0                                   # the running process's own clock
    kernel_sets: list[tuple[tuple[str, ...], int]] = field(default_factory=list)  # (kernels a call ran, calls)
    printed: int = 0                                       # characters the calls wrote to stdout/stderr (traced batches)
    launcher_ms: float = 0.0                               # host time inside the learner's function (traced batches)


# ------------------------------------------------------------------------ verifier -> worker

@dataclass
class Prepare:
    """Before any learner code: import the chapters and take the identities the learner must leave alone.
    The verifier then times empty requests on the grader's own empty batch (`EMPTY_BATCH`), its
    reference for what a request costs a worker no learner code has touched (grader.calls.trusted)."""


EMPTY_BATCH = 0   # the bound batch id every worker holds from its start: no function, no tensors


@dataclass
class Load:
    """Run these cells, after any an earlier check of the same session ran; a new check starts here."""
    cells: list[tuple[str, str]]                                   # (name, source) of the learner's cells
    outcomes: dict[str, KernelOutcome] = field(default_factory=dict)   # how each ended in the notebook's kernel


@dataclass
class Describe:
    names: list[str]


@dataclass
class Call:
    name: str
    args: tuple
    kwargs: dict
    policy: CallPolicy


@dataclass
class Bind:
    name: str
    argsets: list[tuple]
    kwargs: dict


@dataclass
class Batch:
    bid: int
    reps: int
    traced: bool = False    # trace the device (grader.cuda.trace): for the speed report, never a timed verdict
    on_device: bool = True  # False: leave the GPU alone (the empty requests timed before learner code)


@dataclass
class Quit:
    pass


# ------------------------------------------------------------------------ worker -> verifier

@dataclass
class Prepared:
    pass


@dataclass
class Loaded:
    problems: list[str]
    tampered: list[str]


@dataclass
class Described:
    kinds: dict[str, tuple[str, Any]]   # name -> ("callable" | "value" | "opaque" | "missing", value)


@dataclass
class Called:
    result: Any
    facts: Facts


@dataclass
class Bound:
    bid: int


@dataclass
class Batched:
    facts: BatchFacts


@dataclass
class Failed:
    """The request raised: a LadderError to raise again in the verifier."""
    cls: str
    reason: str
    message: str
    crashed: bool = False     # the worker's GPU context is broken: it serves nothing more


# The one reply each request takes (or a Failed). Anything else on the connection was not sent by the
# worker's own loop: the learner's code wrote it (grader.isolation.remote refuses it as `tampered`).
REPLIES = {Prepare: Prepared, Load: Loaded, Describe: Described, Call: Called, Bind: Bound, Batch: Batched,
           Quit: Loaded}


# ------------------------------------------------------------------------ ladder grade <-> verifier

@dataclass
class Job:
    """One graded test cell to check, and how its check runs: what the asking process (grader.isolation.isolate)
    sends the verifier."""
    cells: list[tuple[str, str]]           # the learner's cells: (name, source)
    test: str                              # the test cell's source
    test_name: str = "test"
    outcomes: dict[str, KernelOutcome] = field(default_factory=dict)
    shared_gpu: bool = False               # it runs beside other checks on its GPU (grader.cuda.sharing)
    hung_record: str | None = None         # the notebook run's file of hung learner functions (grader.isolation.hung)
    grader_run: bool = False               # a check of `ladder check` or `ladder grade`'s run (config.grader_run)

    def to_json(self) -> str:
        import json

        return json.dumps({**asdict(self), "outcomes": {k: asdict(v) for k, v in self.outcomes.items()}})

    @classmethod
    def from_json(cls, text: str) -> "Job":
        import json

        raw = json.loads(text)
        raw["cells"] = [tuple(c) for c in raw["cells"]]
        raw["outcomes"] = {k: KernelOutcome(**v) for k, v in raw.get("outcomes", {}).items()}
        return cls(**raw)


def extends(cells, outcomes: dict, ran, ran_outcomes: dict) -> bool:
    """Whether the learner cells `cells`, ended as `outcomes` says, start with `ran`, ended as `ran_outcomes` says:
    whether a session's worker, which ran `ran`, can check them (grader.isolation.isolate.CheckSession)."""
    return ([tuple(c) for c in cells[:len(ran)]] == [tuple(c) for c in ran]
            and all(outcomes.get(name) == ran_outcomes.get(name) for name, _ in ran))


@dataclass
class SessionCheck:
    """One check for a session's verifier (grader.isolation.verifier.serve), from the asking process:
    the job, that process's environment as it is now, and the files the check's output goes to."""
    job: Job
    environ: dict
    stdout_path: str
    stderr_path: str


@dataclass
class Verdict:
    passed: bool
    reason: str | None
    message: str
    stdout: str = ""
    seconds: float = 0.0
    cls: str | None = None
    values: str | None = None   # base64 pickle of the grader results the test cell assigned
    # Of `seconds`, the time the worker took to start and run the learner's cells (imports, compiling):
    # where a check's time goes, reported per cell by `ladder grade` (grader.notebooks.nbexec).
    load_seconds: float = 0.0
    # CPU time of the verifier and its worker during the check: with `seconds`, whether the check waited for
    # the CPU (grader.classgrade.timing). 0 where the check was stopped before its verdict.
    cpu_seconds: float = 0.0
    # Processes the learner's code started that were still running when the check ended, ended then
    # (grader.processes): "pid N (command)" each.
    ended: list[str] = field(default_factory=list)

    def error_name(self) -> str:
        return self.cls or ("CheckFailed" if not self.passed else "")

    def as_dict(self) -> dict:
        return asdict(self)
