"""What goes to a worker (one student to grade) and what comes back, as plain picklable data: a worker
on another machine needs nothing from the instructor's disk but the installed course."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StudentJob:
    assignment: str
    notebook: str                    # the assignment's notebook file name, e.g. 05_triton_matmul.ipynb
    student: str
    submission: bytes                # the submitted notebook, as submitted
    submission_sha256: str
    source: dict[str, bytes]         # the assignment's source folder (solutions/ASSIGNMENT), by relative path
    source_sha256: str
    bars: bytes | None               # the LADDER_BARS override in force, if any
    grader_sha256: str               # the coordinator's grader (grader.classgrade.identity)
    settings: dict[str, str] = field(default_factory=dict)   # the coordinator's LADDER_ settings
    # the coordinator's value (None: unset) of each variable Dask's nanny sets before it starts a worker
    # (grader.classgrade.task.environ_to_ship): the student's processes get these, not the nanny's
    environ: dict[str, str | None] = field(default_factory=dict)


@dataclass
class StudentResult:
    student: str
    executed: bytes | None           # the notebook as the worker's autograde left it (outputs, timings)
    seconds: float                   # wall time of this student on the worker
    worker: str                      # where it ran: host, and the GPU it was pinned to
    grader_sha256: str               # the worker's grader: a different one is refused
    error: str | None = None         # a failure of grading itself (not of the student's code)
    gpu_failure: str | None = None   # the GPU stopped working while this student was graded: grade again elsewhere
    started: float = 0.0             # when the worker began (time.time()): the class's GPU-busy fraction
    split: dict = field(default_factory=dict)   # where `seconds` went (grader.classgrade.timing.student_split)


@dataclass
class StudentGrade:
    student: str
    score: float
    max_score: float
    cells: dict[str, tuple[float, float]]   # grade_id -> (points, max)
    feedback: Path | None
    error: str | None = None
    # Cells whose kernel died or hung: each failed alone, the rest of the notebook was still graded
    # (grader.notebooks.nbexec). Each is "grade_id (or cell N): what happened".
    kernel_losses: list[str] = field(default_factory=list)
    seconds: float = 0.0
    worker: str = ""
    attempts: int = 1
    notes: list[str] = field(default_factory=list)
    skipped: bool = False    # already graded from the same bytes, grader and bars: taken from the journal
    # Why nothing could be graded (a code of grader.errors.REASONS: not-a-notebook, other-chapter,
    # nothing-submitted, not-graded), or None for a graded student; `error` says it in words.
    reason: str | None = None
    # Each graded cell that did not pass: grade_id -> (reason code, the first line of its message), as
    # `ladder check --json` gives them (grader.notebooks.check).
    cell_reasons: dict[str, tuple[str, str]] = field(default_factory=dict)
    started: float = 0.0     # when its worker began (time.time()), 0 where not graded in this run
    split: dict = field(default_factory=dict)   # where its seconds went (grader.classgrade.timing.student_split)

    def points(self):
        """Earned, lost, and not checked here, with why (grader.notebooks.points.Points), from each graded cell's
        points and the reason of each that did not pass (`cell_reasons`)."""
        from ..notebooks.points import Points

        return Points.of((pts, most, self.cell_reasons.get(cell, (None, ""))[0])
                         for cell, (pts, most) in self.cells.items())
