"""In what order a class's students go to the GPUs: the longest expected first.

Why: with students handed out in name order, a long student (one whose code hangs, or who compiles and
autotunes for minutes) that comes late leaves its GPU working alone at the end while the others wait
(two H100s: one GPU finished its share at 202 s, the other at 178 s). Starting the long ones first lets the
short ones fill in behind them, the longest-processing-time rule. What a student will take is read from the
journal (grader.classgrade.journal): the time of their last grading, whatever it was graded from; a student
never graded is expected to take the class's median. The order also goes to Dask as each task's priority,
so that a scheduler holding several runs' students starts the long ones first too; Dask's work stealing
stays on, to move a student queued behind a straggler to a free worker.
"""

from __future__ import annotations

from statistics import median

from .job import StudentJob
from .journal import Entry


def expected_seconds(jobs: list[StudentJob], recorded: dict[str, Entry]) -> dict[str, float]:
    """student -> the seconds their grading is expected to take: their last grading's, else the median of
    the students of this class graded before (0 where none was: then the order is by name)."""
    known = {job.student: recorded[job.student].seconds for job in jobs
             if job.student in recorded and recorded[job.student].seconds}
    default = median(known.values()) if known else 0.0
    return {job.student: known.get(job.student, default) for job in jobs}


def longest_first(jobs: list[StudentJob], recorded: dict[str, Entry]) -> list[tuple[StudentJob, int]]:
    """The jobs in the order they should start, each with its Dask priority (higher starts first)."""
    expected = expected_seconds(jobs, recorded)
    ordered = sorted(jobs, key=lambda job: (-expected[job.student], job.student))
    return [(job, round(expected[job.student])) for job in ordered]
