"""Graded "diagnose" exercises: read two recorded profiles, name what binds the first, name the next rung.

A case shows the signatures of two rungs of one exercise, recorded on an H100 or, where the case says so,
an H200 (grader.profiles.recorded: no GPU and no Nsight Compute needed), and asks for two answers: the
**binding constraint** of the first rung, one of CONSTRAINTS, and the **next rung**, one of the case's
choices. Each chapter keeps its cases as data (`DIAGNOSE` in grader/chapters/chNN.py: one case, or a tuple
of cases that one `diagnosis()` answers in order) and checks a learner's `diagnosis()` with `judge`.

Every constraint comes with the rule by which a profile shows it (`evidence`), so that a case's answer key
is checked against the recorded numbers (tests/profiles/test_diagnose.py): a case cannot name a
constraint its own profile does not show. A kernel's counters say what binds the kernel while it runs;
when the GPU waits for the host most of a call, they say nothing about the call, so every kernel-level
rule holds only for a rung that keeps the GPU busy.
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
    """What the warps wait on most: the largest stall where none ties with it (Signature.leading_stalls), else ""."""
    leading = sig.leading_stalls
    return leading[0] if len(leading) == 1 else ""


# Below this share of a call the GPU is busy, the host sets the pace (chapter 8's block at B = 16).
GPU_WAITS_BELOW_PCT = 60


def _gpu_waits(sig: Signature) -> bool:
    return sig.gpu_busy_pct < GPU_WAITS_BELOW_PCT   # False without a trace (NaN)


def _on_the_gpu(rule: Callable[[Signature, Signature], bool]) -> Callable[[Signature, Signature], bool]:
    """A kernel-level rule, which shows only where the GPU is busy for the call (see the module's docstring)."""
    return lambda s, b: not _gpu_waits(s) and rule(s, b)


def _bytes_explain_little(s: Signature, b: Signature) -> bool:
    """The bytes do not make the rung slower: those it moves through DRAM beyond the rung beside it, at the peak
    its own DRAM% implies, would take at most a tenth of the time it takes beyond that rung. 9b's every_step moves
    211 MB more than the solution, but at 7% of DRAM's peak: 44 us of its 855 us more (assets/profiles/H200/9b)."""
    extra_bytes = s.dram_bytes - b.dram_bytes
    if extra_bytes <= 0:
        return True
    # DRAM moved s.dram_bytes in dram_pct of time_us at its peak: the extra bytes' share of that time
    extra_at_peak_us = extra_bytes / s.dram_bytes * s.dram_pct / 100 * s.time_us
    return extra_at_peak_us <= 0.1 * (s.time_us - b.time_us)   # False where a figure is NaN


# The stalls of warps waiting on shared memory: to issue to its pipe (mio throttle), or for the data of a load
# from it (short scoreboard). A conflict's extra wavefronts show as one or the other; NVIDIA's Nsight Compute
# developers read these two stalls to tell whether conflicts limit a kernel at all.
SHARED_PIPE_STALLS = ("mio throttle", "short scoreboard")


def _moves_more_in_more_kernels(s: Signature, b: Signature) -> bool:
    """The launch makes more kernels and moves at least 15% more bytes than the rung beside it: a pass split
    into a kernel of its own (7b unfused: 633 MB in two kernels against 516 MB in one, assets/profiles/H100/7b)."""
    return s.launch_kernels > b.launch_kernels and s.launch_dram_bytes >= 1.15 * b.launch_dram_bytes


CONSTRAINTS: dict[str, Constraint] = {c.name: c for c in (
    Constraint("dram-bandwidth", "memory streams at its peak: the bytes themselves set the time, and only moving "
               "fewer of them (fusion, narrower types) makes it faster",
               "DRAM% (nine tenths of peak or more)",
               _on_the_gpu(lambda s, b: s.dram_pct >= 90 and not _moves_more_in_more_kernels(s, b))),
    Constraint("bytes-in-flight", "memory is busy but short of its peak: each thread has too few loads in flight "
               "to cover their latency, and the same bytes in wider loads go faster",
               "DRAM% between three fifths and nine tenths of peak, long scoreboard the top stall, an SM full of "
               "warps, and the rung beside it higher with the same bytes",
               # three fifths: 7a's two-pass softmax in 4-byte loads streams at 65% of peak, the same passes in
               # 16-byte loads at 89% (assets/profiles/H100/7a); at half occupancy or less, `occupancy` says it
               _on_the_gpu(lambda s, b: 60 <= s.dram_pct < 90 and b.dram_pct >= s.dram_pct + 5
                           and _top_stall(s) == "long scoreboard" and s.theoretical_occupancy_pct > 50)),
    Constraint("occupancy", "memory is short of its peak because too few warps are resident (registers, shared "
               "memory or the block size hold the SM to half its warps or fewer): the bytes in flight are the "
               "resident warps times what each keeps in flight",
               "occupancy% and the limiter (half or less of the SM's warps), and DRAM% below that of the rung "
               "beside it, which keeps more warps resident",
               _on_the_gpu(lambda s, b: s.theoretical_occupancy_pct <= 50
                           and b.theoretical_occupancy_pct >= 1.5 * s.theoretical_occupancy_pct
                           and s.dram_pct < 90 and b.dram_pct >= s.dram_pct + 5)),
    Constraint("uncoalesced", "a warp's global accesses touch many more 32-byte sectors than its data needs",
               "sectors per request (4 for a warp reading 32 consecutive floats, 16 for 16-byte loads; 32 for one "
               "sector per thread) and a queue of memory instructions (lg throttle, drain)",
               _on_the_gpu(lambda s, b: max(s.ld_sectors_per_request, s.st_sectors_per_request) >= 16
                           and _top_stall(s) in ("lg throttle", "drain"))),
    Constraint("bank-conflicts", "shared-memory accesses split into several wavefronts, served one after another",
               "smem ld ways (conflict-free: 1 for 4-byte loads, 4 for 16-byte ones; 32 is every lane on one bank) "
               "and the top stall: mio throttle or short scoreboard, warps waiting on the shared-memory pipe",
               # conflicts cost time only where the warps wait on that pipe: 10a's solution loads with 9.5-way
               # conflicts at 74% of DRAM's peak, waiting on global loads (assets/profiles/H200/10a)
               _on_the_gpu(lambda s, b: s.shared_ld_ways >= 8 and _top_stall(s) in SHARED_PIPE_STALLS)),
    Constraint("extra-memory-passes", "memory is busy, but with more bytes than the operation needs: "
               "intermediates go to memory and come back",
               "DRAM% high while the rung beside it, which moves fewer bytes, takes far less time; for a launch of "
               "several kernels, its kernels and DRAM MB in all against the rung beside it",
               _on_the_gpu(lambda s, b: s.dram_pct >= 50 and (b.time_us <= 0.5 * s.time_us
                                                              or _moves_more_in_more_kernels(s, b)))),
    Constraint("cache-traffic-per-flop", "operands are fetched again through L2 and L1 for every few operations: "
               "DRAM idle, the cache hit rate high, warps waiting on loads",
               "DRAM% low, L2 hit% high, long scoreboard the top stall, not tied with another (a tie prints "
               "as a ≈ b), on a grid of at least one wave",
               # under one wave, the idle SMs explain idle DRAM first (too-few-programs)
               _on_the_gpu(lambda s, b: s.dram_pct < 40 and s.l2_hit_pct >= 50
                           and _top_stall(s) == "long scoreboard" and not s.waves_per_sm < 1)),
    Constraint("shared-memory-traffic", "every operation reads its operands from shared memory, whose pipe is "
               "the bottleneck", "the mio throttle stall with few bank conflicts",
               _on_the_gpu(lambda s, b: _top_stall(s) == "mio throttle" and s.shared_ld_ways < 4)),
    Constraint("no-tensor-cores", "the matrix products run on the FMA pipes; the tensor cores sit idle",
               "tensor% (about 0)", _on_the_gpu(lambda s, b: s.tensor_pipe_pct < 1)),
    Constraint("accumulator-promotion", "the tensor cores stop between short chains of MMAs while the partial sums "
               "are scaled and added into the fp32 accumulator: the promotion, not the products, sets the pace",
               "fp32 GFLOP (the promotions' multiply-adds) against the rung beside it, with its tensor% and time: "
               "twice the fp32 work or more, less tensor-pipe use, a longer time, and DRAM too idle for its bytes "
               "to account for the difference",
               # chapter 9's 9b: scales applied after every 32 of K against once per 128-block
               _on_the_gpu(lambda s, b: s.fp32_flops >= 2 * b.fp32_flops and s.tensor_pipe_pct <= 0.9 * b.tensor_pipe_pct
                           and s.time_us >= 1.1 * b.time_us and _bytes_explain_little(s, b))),
    Constraint("wasted-work", "the kernel computes results that are thrown away (masked tiles it could skip)",
               "the time against the rung beside it at the same tensor%",
               _on_the_gpu(lambda s, b: b.time_us <= 0.6 * s.time_us and s.tensor_pipe_pct >= 20)),
    Constraint("too-few-programs", "the grid has fewer programs than the GPU has room for (under one wave): most "
               "SMs have nothing to run, so memory is far from busy though every byte is needed",
               "waves of blocks per SM (under 1: fewer programs than the GPU holds at once) and DRAM% low",
               _on_the_gpu(lambda s, b: s.waves_per_sm < 1 and s.dram_pct < 40)),
    Constraint("host-bound", "the GPU waits for the host between kernels: it is busy for a small part of each "
               "call, so no faster kernel shortens the call; fewer launches do",
               "GPU busy% (a device trace of calls back to back) against the rung beside it",
               lambda s, b: _gpu_waits(s) and b.gpu_busy_pct >= s.gpu_busy_pct + 20),
)}


@dataclass(frozen=True)
class Case:
    key: str                   # "2.P": the exercise's name in the notebook
    exercise: str              # the recorded exercise ("2", "5a", "8b-host")
    rung: str                  # the rung to diagnose
    beside: str                # the rung shown beside it, for contrast
    binding: str               # the answer key: a name in CONSTRAINTS
    next_rung: str             # the answer key: one of `choices`
    choices: tuple[str, ...]
    why: str                   # the reading, said once the answer is right
    # the folder of assets/profiles/ the two rungs were recorded in (None: the one whose index has the exercise)
    gpu: str | None = None

    def __post_init__(self):
        if self.binding not in CONSTRAINTS:
            raise ValueError(f"{self.key}: {self.binding!r} is not a constraint")
        if self.next_rung not in self.choices:
            raise ValueError(f"{self.key}: the next rung is not one of the choices")

    def signatures(self) -> tuple[Signature, Signature]:
        return recorded.load(self.exercise, self.rung, self.folder), recorded.load(self.exercise, self.beside, self.folder)

    @property
    def folder(self) -> str:
        return self.gpu or recorded.gpu_of(self.exercise)

    @property
    def recorded(self) -> bool:
        """Whether this copy of the course holds the case's two profiles (a new chapter's are recorded on a GPU
        after it is written: tests/test_records.py refuses to let a case without them ship)."""
        return recorded.has(self.exercise, (self.rung, self.beside), self.folder)


def cases(diagnose: Case | tuple[Case, ...]) -> tuple[Case, ...]:
    """A chapter's DIAGNOSE as a tuple of cases, in the order its `diagnosis()` answers them."""
    return diagnose if isinstance(diagnose, tuple) else (diagnose,)


def show(diagnose: Case | tuple[Case, ...]) -> str:
    """Each case's two profiles (rung first), what each rung is, and its choices; the constraints once. A case whose
    profiles are not recorded yet says so, and still asks its question."""
    parts = []
    for case in cases(diagnose):
        what = f"Exercise {case.key}: two rungs of exercise {case.exercise.split('-')[0]}"
        if case.recorded:
            gpu = recorded.index(case.folder)["gpu"]
            lines = [f"{what}, profiled on {gpu}:", ""]
            lines += [f"  {r}: {recorded.describe(case.exercise, r, case.folder)}" for r in (case.rung, case.beside)]
            lines += ["", recorded.table(case.exercise, case.folder, only=(case.rung, case.beside))]
        else:
            # Only until a case's recording is in place: tests/profiles/test_diagnose.py fails meanwhile.
            lines = [f"{what}. (The profiles of `{case.rung}` and `{case.beside}` are not recorded in this copy of "
                     f"the course yet: assets/profiles/{case.folder}/{case.exercise}/ is recorded on an {case.folder} "
                     "by `assets/results/gpu_measure.sh` and shipped with the chapter.)"]
        lines += ["", f"What binds `{case.rung}`? One of the constraints below. And its next rung? One of:"]
        lines += [f"  {choice!r}" for choice in case.choices]
        parts.append("\n".join(lines))
    parts.append("The constraints:\n" + "\n".join(f"  {c.name:<24} {c.meaning}" for c in CONSTRAINTS.values()))
    return "\n\n".join(parts)


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


def judge_all(diagnose: tuple[Case, ...], answer) -> list[str]:
    """Several cases answered by one `diagnosis()`: a tuple with one (binding, next rung) pair per case, in
    order. Each pair is judged as `judge` does; the lines a right answer prints, one per case."""
    shape = ", ".join(f"(binding, next rung) for {case.key}" for case in diagnose)
    if not isinstance(answer, (tuple, list)) or len(answer) != len(diagnose) or not all(
            isinstance(pair, (tuple, list)) for pair in answer):
        raise CheckFailed(f"{diagnose[0].key.split(' ')[0]}: diagnosis() returned {answer!r}; it should return a "
                          f"tuple of {len(diagnose)} pairs: ({shape}).")
    return [judge(case, pair) for case, pair in zip(diagnose, answer)]
