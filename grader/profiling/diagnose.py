"""Graded "diagnose" exercises: read two recorded profiles, name what binds the first, name the next rung.

A case shows the signatures of two rungs of one exercise, recorded on an H100 (grader.profiling.recorded:
no GPU and no Nsight Compute needed), and asks for two answers: the **binding constraint** of the first
rung, one of CONSTRAINTS, and the **next rung**, one of the case's choices. Each chapter keeps its cases
as data (`DIAGNOSE` in grader/chapters/chNN.py) and checks a learner's `diagnosis()` with `judge`.

Every constraint comes with the rule by which a profile shows it (`evidence`), so that a case's answer key
is checked against the recorded numbers (tests/profiling/test_diagnose.py): a case cannot name a
constraint its own profile does not show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CheckFailed
from . import recorded
from .signature import Signature


@dataclass(frozen=True)
class Constraint:
    name: str
    meaning: str
    look_at: str                                        # the numbers to read, for hints
    evidence: Callable[[Signature, Signature], bool]    # (the rung, the rung beside it) -> shows it


def _top_stall(sig: Signature) -> str:
    return sig.top_stalls[0][0] if sig.top_stalls else ""


CONSTRAINTS: dict[str, Constraint] = {c.name: c for c in (
    Constraint("dram-bandwidth", "memory streams at its peak: the bytes themselves set the time, and only moving "
               "fewer of them (fusion, narrower types) makes it faster",
               "DRAM% (nine tenths of peak or more)", lambda s, b: s.dram_pct >= 90),
    Constraint("bytes-in-flight", "memory is busy but short of its peak: each thread has too few loads in flight "
               "to cover their latency, and the same bytes in wider loads go faster",
               "DRAM% between three fifths and nine tenths of peak, long scoreboard the top stall, and the rung "
               "beside it higher with the same bytes",
               # three fifths: 7a's two-pass softmax in 4-byte loads streams at 65% of peak, the same passes in
               # 16-byte loads at 89% (assets/profiles/H100/7a)
               lambda s, b: 60 <= s.dram_pct < 90 and b.dram_pct >= s.dram_pct + 5
               and _top_stall(s) == "long scoreboard"),
    Constraint("uncoalesced", "a warp's global accesses touch many more 32-byte sectors than its data needs",
               "sectors per request (4 for a warp reading 32 consecutive floats, 16 for 16-byte loads; 32 for one "
               "sector per thread) and a queue of memory instructions (lg throttle, drain)",
               lambda s, b: max(s.ld_sectors_per_request, s.st_sectors_per_request) >= 16
               and _top_stall(s) in ("lg throttle", "drain")),
    Constraint("bank-conflicts", "shared-memory accesses split into several wavefronts, served one after another",
               "smem ld ways (1 is conflict-free, 32 is every lane on one bank) and the mio throttle stall",
               lambda s, b: s.shared_ld_ways >= 8),
    Constraint("extra-memory-passes", "memory is busy, but with more bytes than the operation needs: "
               "intermediates go to memory and come back",
               "DRAM% high while the rung beside it, which moves fewer bytes, takes far less time",
               lambda s, b: s.dram_pct >= 50 and b.time_us <= 0.5 * s.time_us),
    Constraint("cache-traffic-per-flop", "operands are fetched again through L2 and L1 for every few operations: "
               "DRAM idle, the cache hit rate high, warps waiting on loads",
               "DRAM% low, L2 hit% high, long scoreboard the top stall, on a grid of at least one wave",
               # under one wave, the idle SMs explain idle DRAM first (too-few-programs)
               lambda s, b: s.dram_pct < 40 and s.l2_hit_pct >= 50 and _top_stall(s) == "long scoreboard"
               and not s.waves_per_sm < 1),
    Constraint("shared-memory-traffic", "every operation reads its operands from shared memory, whose pipe is "
               "the bottleneck", "the mio throttle stall with few bank conflicts",
               lambda s, b: _top_stall(s) == "mio throttle" and s.shared_ld_ways < 4),
    Constraint("no-tensor-cores", "the matrix products run on the FMA pipes; the tensor cores sit idle",
               "tensor% (about 0)", lambda s, b: s.tensor_pipe_pct < 1),
    Constraint("wasted-work", "the kernel computes results that are thrown away (masked tiles it could skip)",
               "the time against the rung beside it at the same tensor%", lambda s, b: b.time_us <= 0.6 * s.time_us
               and s.tensor_pipe_pct >= 20),
    Constraint("too-few-programs", "the grid has fewer programs than the GPU has room for (under one wave): most "
               "SMs have nothing to run, so memory is far from busy though every byte is needed",
               "waves of blocks per SM (under 1: fewer programs than the GPU holds at once) and DRAM% low",
               lambda s, b: s.waves_per_sm < 1 and s.dram_pct < 40),
)}


@dataclass(frozen=True)
class Case:
    key: str                   # "2.P": the exercise's name in the notebook
    exercise: str              # the recorded exercise ("2", "5a")
    rung: str                  # the rung to diagnose
    beside: str                # the rung shown beside it, for contrast
    binding: str               # the answer key: a name in CONSTRAINTS
    next_rung: str             # the answer key: one of `choices`
    choices: tuple[str, ...]
    why: str                   # the reading, said once the answer is right
    gpu: str = recorded.GPU    # the GPU its profiles were recorded on (assets/profiles/<gpu>/)

    def __post_init__(self):
        if self.binding not in CONSTRAINTS:
            raise ValueError(f"{self.key}: {self.binding!r} is not a constraint")
        if self.next_rung not in self.choices:
            raise ValueError(f"{self.key}: the next rung is not one of the choices")

    def signatures(self) -> tuple[Signature, Signature]:
        return (recorded.load(self.exercise, self.rung, self.gpu),
                recorded.load(self.exercise, self.beside, self.gpu))

    @property
    def recorded(self) -> bool:
        """Whether this copy of the course holds the case's two profiles (a new chapter's are recorded on a GPU
        after it is written: tests/test_records.py refuses to let a case without them ship)."""
        return recorded.has(self.exercise, (self.rung, self.beside), self.gpu)


def show(case: Case) -> str:
    """The two profiles (rung first), what each rung is, the constraints and the choices, as text."""
    lines = [f"Exercise {case.key}: two rungs of exercise {case.exercise}, profiled on an {case.gpu}:", ""]
    if case.recorded:
        lines += [f"  {r}: {recorded.describe(case.exercise, r, case.gpu)}" for r in (case.rung, case.beside)]
        lines += ["", recorded.table(case.exercise, case.gpu, only=(case.rung, case.beside))]
    else:
        lines += [f"  (The profiles of `{case.rung}` and `{case.beside}` are not recorded in this copy of the course "
                  f"yet: assets/profiles/{case.gpu}/{case.exercise}/ is recorded on an {case.gpu} by "
                  "`assets/results/gpu_measure.sh` and shipped with the chapter.)"]
    lines += ["", f"What binds `{case.rung}`? One of:"]
    lines += [f"  {c.name:<24} {c.meaning}" for c in CONSTRAINTS.values()]
    lines += ["", f"And the next rung for `{case.rung}`? One of:"]
    lines += [f"  {choice!r}" for choice in case.choices]
    return "\n".join(lines)


def judge(case: Case, answer) -> str:
    """Compare `answer`, (binding, next rung), with the case's key; raise CheckFailed with a hint that
    points at the numbers to read. Returns the line a right answer prints."""
    where = f"{case.key}: diagnosis() returned {answer!r}"
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise CheckFailed(f"{where}; it should return a tuple (binding constraint, next rung).")
    binding, next_rung = answer
    if binding not in CONSTRAINTS:
        raise CheckFailed(f"{where}: {binding!r} is not one of the constraints: {', '.join(CONSTRAINTS)}.")
    if next_rung not in case.choices:
        raise CheckFailed(f"{where}: {next_rung!r} is not one of the choices: "
                          + "; ".join(repr(c) for c in case.choices) + ".")
    if binding != case.binding:
        guess = CONSTRAINTS[binding]
        raise CheckFailed(f"{where}: `{case.rung}` is not bound by {binding}. To see {binding}, look at "
                          f"{guess.look_at}. Read the table again, column by column, against the rung beside it.")
    if next_rung != case.next_rung:
        raise CheckFailed(f"{where}: the constraint is right, but {next_rung!r} does not relieve "
                          f"{case.binding}. Which choice changes {CONSTRAINTS[case.binding].look_at}?")
    return f"✓ {case.key} diagnosis: {case.binding}, then {case.next_rung!r}. {case.why}"
