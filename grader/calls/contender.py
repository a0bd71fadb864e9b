"""What the timing backend (grader.harness.timing) times in batches where it runs: the one interface between
the timing loop and the time a verdict rests on (grader.calls.trusted).

A learner's function is timed where it runs, by the asking process's clock (grader.calls.seam.Batch): the
loop asks for batches, tells it the SM clock after each and the round's median at the end, and sizes the next
round's batches from that median. torch's contenders and the copy ceiling are plain callables, timed by the
loop itself in this process.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class Contender(ABC):
    """A contender that runs its own timed batches."""

    @abstractmethod
    def timed_batch(self, reps: int) -> float:
        """Milliseconds for `reps` calls in a row, the figure a verdict rests on."""

    @property
    def process_id(self) -> int | None:
        """The process the calls run in: one of those a timing expects on the GPU (grader.cuda.neighbours);
        None where that is this one."""
        return None

    @property
    def last_round_ms(self) -> float | None:
        """The latest round's median per call, which sizes the next round's batches; None before the first."""
        return None

    def note_clock(self, state) -> None:
        """The SM clock read after one of this round's batches (grader.cuda.clocks)."""

    def note_round(self, ms_per_call: float) -> None:
        """The round's median per call: the round is over."""
