"""A notebook's graded checks, run ahead of the notebook on the student's own GPU, in the run's few sessions
(ChecksAhead).

Why: a graded check runs in the grader's own processes (grader.isolation), and most of its time is spent on the
CPU: starting its worker with the learner's cells and compiling the learner's Triton kernels for each
new specialisation of the shapes it tries. One check after another, the GPU mostly waits (on an H100,
chapter 6's three backward-pass checks took 26-28 s each; assets/results/class-grading). A check is described
by data only: the learner's cells before its test cell, the test cell's own source, and how those cells
ended in the notebook's kernel. So it can start before the kernel reaches its cell, by assuming that
every learner cell before it runs as it reads, and beside the student's other checks.

A verdict from ahead is used only where it is the verdict the check gives when its cell is reached:
- the learner cells before it, and the test cell, are the ones it ran, and none of those cells raised
  or took the notebook's kernel down (a check rebuilds them as they ended: grader.isolation.isolate);
- it timed nothing. On a GPU shared with other checks, whatever would time (a speed cell, an autotuner
  timing its configurations, a ceiling's measurement) makes the check "deferred" instead
  (grader.cuda.sharing). Such a check, and any check whose verdict from ahead is not used, runs again
  when the notebook reaches its cell, after every check still running ahead has finished and before
  the next starts: while it runs, nothing else of the student's runs on the GPU but the notebook's
  kernel, which is waiting for that cell;
- it neither crashed nor ran out of time, which a neighbour (memory, CPU) could have caused.

Correctness, out-of-bounds writes, memory use, tensor-core counts and the rules of
grader.calls.rules do not depend on what else runs on the GPU. Checks of one student run ahead
together, never two students' (grader.classgrade grades one student per GPU).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..errors import DEFERRED
from ..learner.cells import grade_id, is_autograded_test, learner_cells
from ..learner.code import KernelOutcome
from .slots import host_slots, machine_slot

# Verdicts from ahead that are never used: no verdict (deferred), or one that a neighbour may have caused.
_NOT_KEPT = (DEFERRED, "crashed", "timed-out")


@dataclass(frozen=True)
class _Check:
    """What a check ahead ran: the learner's cells before the test cell, and the test cell's source."""
    gid: str
    cells: tuple[tuple[str, str], ...]
    source: str


class ChecksAhead:
    """The graded checks of one notebook, started ahead of its execution in the notebook's order, in the run's
    sessions (grader.isolation.isolate.CheckSessions): as many at once as it has sessions, each check in an idle
    session, the one whose worker ran the most of its cells, and in one of the machine's check slots
    (grader.isolation.slots), shared with the other students graded on this machine at once.

    A check ahead whose verdict cannot stand (a speed check, deferred because it would time) leaves its session
    reserved: the notebook checks that cell again, with the GPU to itself, in that session, whose worker ran
    exactly its cells. Until then the later checks ahead use the other sessions; where every session is kept so,
    they wait."""

    def __init__(self, nb, cwd: str | None, timeout_s: float | None, sessions, check):
        """`check`: grader.isolation.isolate.check_sources (passed in by the executor, which calls it too)."""
        self.cwd, self.timeout_s, self.sessions, self.check = cwd, timeout_s, sessions, check
        self.width = sessions.width
        self.pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="ladder-ahead")
        self.cancel = threading.Event()
        self.turn = threading.Condition()
        self.alone_now = 0      # checks the notebook runs itself, now
        self.running = 0        # checks ahead that hold a session now
        self.checks: dict[str, _Check] = {}
        self.futures: dict[str, Future] = {}
        self.used: list[str] = []        # cells whose verdict from ahead was used
        self.again: dict[str, str] = {}  # cells checked again when reached, and why
        self.slot_waits: dict[str, float] = {}   # seconds each check waited for a slot of the machine's
        for index, cell in enumerate(nb.cells):
            if is_autograded_test(cell):
                gid = grade_id(cell) or f"cell-{index}"
                if gid not in self.checks:   # a grade_id used twice: only the first runs ahead
                    self.checks[gid] = _Check(gid, tuple(learner_cells(nb, gid)), cell.get("source", ""))
        for check in self.checks.values():
            self.futures[check.gid] = self.pool.submit(self._run, check)

    @classmethod
    def start(cls, nb, cwd: str | None, timeout_s: float | None, sessions, check) -> ChecksAhead | None:
        """Checks ahead for `nb` in `sessions`, or None where there is one session (each check runs when its cell is
        reached)."""
        return cls(nb, cwd, timeout_s, sessions, check) if sessions.width > 1 else None

    def _run(self, check: _Check):
        with self.turn:
            # A session is taken only while the notebook checks nothing itself, and one is free: never one that
            # waits for the notebook's check of its cell (a check ahead waiting for such a session, counted as
            # running, would keep the notebook from ever reaching that cell).
            session = None
            while not self.cancel.is_set():
                if not self.alone_now:
                    session = self.sessions.take(check.cells, {}, self.cwd)
                    if session is not None:
                        break
                self.turn.wait(0.25)   # woken when a check ahead ends, the notebook's own check ends, or close()
            if session is None:
                raise RuntimeError("the notebook's run ended before this check's turn")
            self.running += 1
        verdict = None
        try:
            with machine_slot(host_slots(self.width), self.cancel) as waited:
                self.slot_waits[check.gid] = round(waited, 3)
                verdict = self.check(list(check.cells), check.source, check.gid, timeout_s=self.timeout_s,
                                     cwd=self.cwd, shared_gpu=True, cancel=self.cancel, session=session)
            return verdict
        finally:
            kept = verdict is not None and _not_kept(verdict) is None
            self.sessions.give_back(session, reserve_for=None if kept else check.gid)
            with self.turn:
                self.running -= 1
                self.turn.notify_all()

    def take(self, gid: str, cells: list[tuple[str, str]], source: str, outcomes: dict[str, KernelOutcome]):
        """The verdict from ahead for the test cell `gid`, if it is the one the check gives now (see the
        module's docstring), else None. Waits for it if it is still running."""
        check, future = self.checks.get(gid), self.futures.pop(gid, None)
        if check is None or future is None:
            return None
        try:
            verdict = future.result()
        except Exception as exc:  # noqa: BLE001 - the check runs again when its cell is reached, and says why there
            self.again[gid] = f"failed ahead ({type(exc).__name__}: {exc})"
            return None
        why = _not_usable(check, cells, source, outcomes, verdict)
        if why is None:
            self.used.append(gid)
            return verdict
        self.again[gid] = why
        return None

    def alone(self):
        """A context in which the notebook checks a cell itself, in one of the run's sessions, with no check ahead
        beside it: those running finish first, and none starts before it ends."""
        return _Alone(self)

    def summary(self) -> dict:
        """For the executed notebook's metadata: how many ran at once, whose verdicts were used, and why
        the others were checked again."""
        return {"at_once": self.width, "machine_slots": host_slots(self.width), "used": list(self.used),
                "checked_again": dict(self.again), "slot_wait_seconds": round(sum(self.slot_waits.values()), 3)}

    def close(self) -> None:
        """Stop every check still running ahead (a notebook whose run ended early) and the pool."""
        self.cancel.set()
        with self.turn:   # a check waiting for its turn sees the cancel
            self.turn.notify_all()
        self.pool.shutdown(wait=True, cancel_futures=True)


def _not_usable(check: _Check, cells, source: str, outcomes: dict[str, KernelOutcome], verdict) -> str | None:
    """Why a verdict from ahead is not the one the check gives when its cell is reached, or None where it is."""
    if check.cells != tuple(cells) or check.source != source:
        return "its cells changed"
    if any(name in outcomes for name, _ in cells):
        return "a learner cell before it raised or took the kernel down"
    return _not_kept(verdict)


def _not_kept(verdict) -> str | None:
    """Why a verdict from ahead cannot stand whatever the notebook's cells did: no verdict, or one a neighbour
    on the GPU may have caused."""
    if verdict.reason in _NOT_KEPT:
        return f"{verdict.reason} ahead"
    if "out of memory" in verdict.message.lower():   # the GPU's memory was shared too
        return "out of memory ahead"
    return None


class _Alone:
    def __init__(self, ahead: ChecksAhead):
        self.ahead = ahead

    def __enter__(self):
        with self.ahead.turn:
            self.ahead.alone_now += 1
            self.ahead.turn.wait_for(lambda: not self.ahead.running)
        return self

    def __exit__(self, *exc):
        with self.ahead.turn:
            self.ahead.alone_now -= 1
            self.ahead.turn.notify_all()
        return False
