"""The instructor's workspace, and the one writer of its gradebook.

A worker's executed notebook (grader.classgrade.task) is recorded by nbgrader's own autograde, run here
with its Execute step replaced by `ExecutedElsewhere`, which takes every cell's outputs from that
notebook instead of running it. Everything else is nbgrader's: the student and submission rows, the
files copied from source/, the restored test cells, the scores (SaveAutoGrades), late penalties, the
autograded notebook and the feedback page. The worker's autograde started from the same submission,
source and nbgrader, so its cells must match these one for one; a notebook that does not is refused.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from traitlets import Unicode

from ..errors import LadderError
from ..harness.quiet import captured_stderr
from . import course
from .job import StudentGrade, StudentJob, StudentResult
from .journal import Entry, Journal, retrying

EXECUTED_DIR = "executed"   # in the workspace: STUDENT/ASSIGNMENT/NOTEBOOK.ipynb as each worker returned it
# nbgrader reports a database collision as a failed step, with the driver's error in its log
_COLLISION = ("database is locked", "OperationalError", "IntegrityError", "UniqueViolation", "duplicate key",
              "could not serialize", "deadlock detected", "ForeignKeyViolation")


class ExecutedElsewhere(Preprocessor):
    """nbgrader's Execute step for a notebook a worker already executed: copy its cells' outputs."""

    enabled = True   # nbconvert's preprocessors are off unless asked; this one is the pipeline's Execute step
    executed_dir = Unicode(help="folder of executed notebooks, as EXECUTED_DIR/STUDENT/ASSIGNMENT/NAME.ipynb").tag(config=True)

    def preprocess(self, nb, resources):
        import nbformat

        info = resources["nbgrader"]
        path = Path(self.executed_dir) / info["student"] / info["assignment"] / f"{info['notebook']}.ipynb"
        ran = nbformat.read(str(path), as_version=4)
        if len(ran.cells) != len(nb.cells) or any(
                (a.cell_type, a.source) != (b.cell_type, b.source) for a, b in zip(ran.cells, nb.cells)):
            raise LadderError(f"the notebook a worker graded for {info['student']} is not the one this workspace "
                              "prepared from the same submission: the worker runs another version of the course "
                              "or of nbgrader")
        for mine, theirs in zip(nb.cells, ran.cells):
            if mine.cell_type == "code":
                mine.outputs = theirs.outputs
                mine.execution_count = theirs.execution_count
            for key in ("execution", "ladder"):   # nbclient's and the isolated checks' timings
                if key in theirs.metadata:
                    mine.metadata[key] = theirs.metadata[key]
        return nb, resources


def kernel_losses(autograded_nb: Path) -> list[str]:
    """The cells of an autograded notebook where LadderExecute lost a kernel or stopped running."""
    from ..notebooks.nbexec import ENAMES

    if not autograded_nb.is_file():
        return []
    nb = json.loads(autograded_nb.read_text())
    found = []
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            # evalue: nbgrader's own timeout error (the interrupt worked, the kernel lived) has none
            if out.get("output_type") == "error" and out.get("ename") in ENAMES and out.get("evalue"):
                name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell {index + 1}"
                found.append(f"{name}: {out.get('evalue', '').split('. ')[0]}")
                break
    return found


class Workspace:
    """The instructor's nbgrader course folder for one assignment, and its gradebook."""

    def __init__(self, folder: Path, assignment: str, notebook: str, db_url: str | None = None,
                 existing: bool = False):
        self.folder = folder.resolve()
        self.assignment = assignment
        self.notebook = notebook
        self.db_url = db_url or course.sqlite_url(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(self.db_url, existing=existing)
        self._recording_api = None

    @classmethod
    def existing(cls, folder: Path, assignment: str | None = None, db_url: str | None = None,
                 all_its_students: bool = True) -> Workspace:
        """A workspace `ladder grade` graded in, for reading; the assignment may be left out where it holds one.
        Its gradebook must be there, and (`all_its_students`) hold every student the workspace holds a page for: a
        wrong --db made an empty gradebook, and a report of it replaced the class's. (Not asked of the gradebook
        `ladder grade` has just written, which may be another than the one that graded a page's student before.)"""
        assignment, notebook = course.graded_assignment(Path(folder).resolve(), assignment)
        ws = cls(Path(folder), assignment, notebook, db_url, existing=True)
        try:
            if all_its_students:
                ws._holds_its_students()
        except LadderError:
            ws.close()
            raise
        return ws

    def _holds_its_students(self) -> None:
        from nbgrader.api import Gradebook
        from sqlalchemy.engine import make_url

        paged = {p.name for p in (self.folder / "feedback").iterdir() if p.is_dir()} \
            if (self.folder / "feedback").is_dir() else set()
        with Gradebook(self.db_url) as gb:
            held = {student.id for student in gb.students}
        missing = sorted(paged - held)
        if missing:
            shown = make_url(self.db_url).render_as_string(hide_password=True)
            named = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise LadderError(f"the gradebook at {shown} holds {len(paged) - len(missing)} of the {len(paged)} "
                              f"students graded in {self.folder} (not {named}): give the --db that `ladder grade` "
                              "was given; the class report was left as it was")

    def prepare(self, source: dict[str, bytes]) -> None:
        """Generate the assignment into the gradebook; again, after a pause, where another `ladder grade`
        on the same gradebook was generating it at the same moment."""
        for attempt in range(6):
            try:
                return course.generate(self.folder, self.assignment, source, self.db_url)
            except LadderError as exc:
                if attempt == 5 or not any(mark in str(exc) for mark in _COLLISION):
                    raise
                time.sleep(0.5 * (attempt + 1))

    def submission_path(self, student: str) -> Path:
        return self.folder / "submitted" / student / self.assignment / self.notebook

    def autograded_path(self, student: str) -> Path:
        return self.folder / "autograded" / student / self.assignment / self.notebook

    def feedback_path(self, student: str) -> Path:
        return self.folder / "feedback" / student / self.assignment / (Path(self.notebook).stem + ".html")

    def _api(self):
        if self._recording_api is None:
            from traitlets.config import Config

            from ..notebooks.settings import EXECUTE_STEP, autograde_preprocessors

            c = Config()
            c.Autograde.autograde_preprocessors = [ExecutedElsewhere if step == EXECUTE_STEP else step
                                                   for step in autograde_preprocessors()]
            c.ExecutedElsewhere.executed_dir = str(self.folder / EXECUTED_DIR)
            self._recording_api = course.api(self.folder, self.db_url, c)
        return self._recording_api

    def record(self, job: StudentJob, result: StudentResult, attempts: int, notes: list[str]) -> StudentGrade:
        """Record a worker's result: nbgrader's autograde from the executed notebook, feedback, journal."""
        from nbgrader.api import Gradebook, MissingEntry

        submitted = self.submission_path(job.student)
        submitted.parent.mkdir(parents=True, exist_ok=True)
        submitted.write_bytes(job.submission)
        error = result.error
        if result.executed is not None:
            executed = self.folder / EXECUTED_DIR / job.student / job.assignment / job.notebook
            executed.parent.mkdir(parents=True, exist_ok=True)
            executed.write_bytes(result.executed)
            api = self._api()
            for _ in range(8):
                with captured_stderr() as err:
                    auto = api.autograde(job.assignment, job.student, force=True, create=True)
                text = f"{auto.get('error') or ''}\n{auto.get('log') or ''}"
                if auto["success"] or not any(mark in text for mark in _COLLISION):
                    break
            if not auto["success"]:
                error = error or (auto.get("error") or "recording the grade failed") + "\n" + err.summary()
            with captured_stderr():
                fb = api.generate_feedback(job.assignment, job.student, force=True)
        else:
            fb = {"success": False}
            shutil.rmtree(self.autograded_path(job.student).parent, ignore_errors=True)
        cells: dict[str, tuple[float, float]] = {}
        score = max_score = 0.0

        def read():
            nonlocal score, max_score
            with Gradebook(self.db_url) as gb:
                try:
                    sub = gb.find_submission_notebook(Path(job.notebook).stem, job.assignment, job.student)
                except MissingEntry:
                    return False
                for g in sub.grades:
                    if g.cell.cell_type == "code" and g.max_score:
                        cells[g.name] = (float(g.score or 0.0), float(g.max_score))
                score, max_score = float(sub.score), float(sub.max_score)
                return True

        if error is None and not retrying(read):
            error = "no grades recorded"
        grade = StudentGrade(job.student, score, max_score, cells,
                             self.feedback_path(job.student) if fb["success"] else None, error,
                             kernel_losses(self.autograded_path(job.student)), result.seconds, result.worker,
                             attempts, notes, started=result.started, split=result.split)
        if error is None:
            self.journal.record(Entry(job.assignment, job.student, job.submission_sha256, job.source_sha256,
                                      job.grader_sha256, score, max_score, result.seconds, result.worker,
                                      attempts, notes + grade.kernel_losses), result.split, result.started)
        return grade

    def skipped(self, entry: Entry) -> StudentGrade:
        """A student already graded from the same bytes, grader and bars, as the gradebook holds it."""
        from nbgrader.api import Gradebook, MissingEntry

        cells = {}
        with Gradebook(self.db_url) as gb:
            try:
                sub = gb.find_submission_notebook(Path(self.notebook).stem, self.assignment, entry.student)
                cells = {g.name: (float(g.score or 0.0), float(g.max_score))
                         for g in sub.grades if g.cell.cell_type == "code" and g.max_score}
                score, max_score = float(sub.score), float(sub.max_score)
            except MissingEntry:   # the journal outlived the gradebook's row: grade again
                return None
        feedback = self.feedback_path(entry.student)
        return StudentGrade(entry.student, score, max_score, cells, feedback if feedback.is_file() else None,
                            None, kernel_losses(self.autograded_path(entry.student)), entry.seconds, entry.worker,
                            entry.attempts, entry.notes, skipped=True)

    def explain(self, grade: StudentGrade, reason: str, detail: str, submission: bytes | None = None) -> StudentGrade:
        """A student nothing could be graded for: kept as submitted (if anything was), scored 0 in the
        gradebook (a student row and no submission, so the CSV shows 0 and no earlier score), and given a
        feedback page that says why (grader.classgrade.feedback)."""
        from dataclasses import replace

        from nbgrader.api import Gradebook, MissingEntry

        from .feedback import explanation, write_page

        if submission is not None:
            submitted = self.submission_path(grade.student)
            submitted.parent.mkdir(parents=True, exist_ok=True)
            submitted.write_bytes(submission)
        shutil.rmtree(self.autograded_path(grade.student).parent, ignore_errors=True)

        def enter():
            with Gradebook(self.db_url) as gb:
                gb.update_or_create_student(grade.student)
                try:
                    gb.remove_submission(self.assignment, grade.student)
                except MissingEntry:
                    pass
                return float(gb.find_assignment(self.assignment).max_score)

        max_score = retrying(enter)
        page = write_page(self.feedback_path(grade.student),
                          explanation(self.assignment, self.notebook, reason, detail, max_score))
        return replace(grade, score=0.0, max_score=max_score, cells={}, feedback=page, reason=reason,
                       cell_reasons={})

    def not_graded_path(self) -> Path:
        return self.folder / f"not-graded-{self.assignment}.json"

    def record_not_graded(self, grades: list[StudentGrade]) -> None:
        """Keep why each student of this run was not graded (the journal holds only the graded), for the class
        report to say so when it is built again; a later run that grades them replaces it."""
        self.not_graded_path().write_text(json.dumps({g.student: g.error for g in grades if g.error}, indent=1))

    def not_graded(self) -> dict[str, str]:
        """student -> why, for the students the last run did not grade."""
        path = self.not_graded_path()
        return json.loads(path.read_text()) if path.is_file() else {}

    def export_csv(self, path: Path) -> None:
        from nbgrader.api import Gradebook
        from nbgrader.plugins import CsvExportPlugin

        with Gradebook(self.db_url) as gb:
            CsvExportPlugin(to=str(path)).export(gb)

    def close(self) -> None:
        self.journal.close()
