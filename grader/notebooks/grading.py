"""`ladder grade`: the instructor's path. Submissions in, autograded notebooks, feedback and a CSV out.

Input is either nbgrader's `submitted/` tree (submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb) or a
folder with one notebook per student (STUDENT.ipynb). Grading happens in a workspace folder that
is an nbgrader course of its own (source/, release/, submitted/, autograded/, feedback/,
gradebook.db), so the repository's course/ is never touched. Everything below is nbgrader's own
machinery, driven through NbGraderAPI; this module only arranges the folders. The one change to
nbgrader's pipeline is its execute step (settings.configure_nbgrader puts grader.notebooks.nbexec's
LadderExecute there): a kernel that dies or hangs fails the cell it was running, not the notebook.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LadderError
from ..harness.quiet import captured_stderr
from .course import SOURCE_DIR, nbgrader_env, repo_root
from .settings import configure_nbgrader


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


def _source_notebook(root: Path, assignment: str) -> Path:
    folder = root / SOURCE_DIR / assignment
    notebooks = sorted(folder.glob("*.ipynb"))
    if not folder.is_dir() or not notebooks:
        raise LadderError(f"no assignment {assignment!r}: {folder} has no notebook")
    if len(notebooks) > 1:
        raise LadderError(f"{folder} has several notebooks; ladder grade handles one per assignment")
    return notebooks[0]


def collect_submissions(submissions: Path, assignment: str, notebook_name: str) -> dict[str, Path]:
    """student id -> submitted notebook, from either layout."""
    if not submissions.is_dir():
        raise LadderError(f"{submissions} is not a folder")
    flat = sorted(submissions.glob("*.ipynb"))
    if flat:
        return {p.stem: p for p in flat}
    found = {}
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
        nb = student_dir / assignment / notebook_name
        if nb.is_file():
            found[student_dir.name] = nb
        else:
            candidates = sorted((student_dir / assignment).glob("*.ipynb"))
            if candidates:
                found[student_dir.name] = candidates[0]
    if not found:
        raise LadderError(f"no submissions found in {submissions}: expected STUDENT.ipynb files or "
                          f"STUDENT/{assignment}/{notebook_name}")
    return found


def kernel_losses(autograded_nb: Path) -> list[str]:
    """The cells of an autograded notebook where LadderExecute lost a kernel or stopped running."""
    from .nbexec import ENAMES

    if not autograded_nb.is_file():
        return []
    import nbformat

    nb = nbformat.read(str(autograded_nb), as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            # evalue: nbgrader's own timeout error (the interrupt worked, the kernel lived) has none
            if out.get("output_type") == "error" and out.get("ename") in ENAMES and out.get("evalue"):
                name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell {index + 1}"
                found.append(f"{name}: {out.get('evalue', '').split('. ')[0]}")
                break
    return found


def workspace_config(workspace: Path):
    """nbgrader's configuration for a grading workspace (source/, release/, submitted/, autograded/,
    feedback/ and gradebook.db under `workspace`), with this course's executor."""
    from traitlets.config import Config

    nbgrader_env()
    c = Config()
    configure_nbgrader(c, root=str(workspace))
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.db_url = f"sqlite:///{workspace / 'gradebook.db'}"
    return c


def _api(workspace: Path):
    from nbgrader.apps import NbGraderAPI

    return NbGraderAPI(config=workspace_config(workspace))


def grade(submissions: Path, assignment: str, workspace: Path, csv_path: Path | None = None,
          bars: Path | None = None, echo=print) -> list[StudentGrade]:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.plugins import CsvExportPlugin

    root = repo_root()
    source_nb = _source_notebook(root, assignment)
    workspace = workspace.resolve()
    if bars is not None:
        os.environ["LADDER_BARS"] = str(Path(bars).resolve())  # the notebook kernels inherit it

    src = workspace / "source" / assignment
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(source_nb.parent, src, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    students = collect_submissions(submissions.resolve(), assignment, source_nb.name)
    for student, nb in students.items():
        dest = workspace / "submitted" / student / assignment
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copy2(nb, dest / source_nb.name)

    api = _api(workspace)
    with captured_stderr() as err:
        made = api.generate_assignment(assignment, force=True, create=True)
    if not made["success"]:
        raise LadderError(f"nbgrader could not prepare {assignment}: {made.get('error')}\n{err.summary()}")

    grades = []
    for student in students:
        echo(f"grading {student} ...")
        with captured_stderr():
            auto = api.autograde(assignment, student, force=True, create=True)
            fb = api.generate_feedback(assignment, student, force=True)
        error = None if auto["success"] else (auto.get("error") or auto.get("log") or "autograde failed")
        feedback = workspace / "feedback" / student / assignment / (source_nb.stem + ".html")
        cells = {}
        score = max_score = 0.0
        with Gradebook(f"sqlite:///{workspace / 'gradebook.db'}") as gb:
            try:
                sub = gb.find_submission_notebook(source_nb.stem, assignment, student)
                for g in sub.grades:
                    if g.cell.cell_type == "code" and g.max_score:
                        cells[g.name] = (float(g.score or 0.0), float(g.max_score))
                score, max_score = float(sub.score), float(sub.max_score)
            except MissingEntry:
                error = error or "no grades recorded"
        autograded = workspace / "autograded" / student / assignment / source_nb.name
        grades.append(StudentGrade(student, score, max_score, cells,
                                   feedback if fb["success"] and feedback.is_file() else None, error,
                                   kernel_losses(autograded)))

    csv_path = (csv_path or workspace / "grades.csv").resolve()
    with Gradebook(f"sqlite:///{workspace / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(csv_path)).export(gb)
    for g in grades:
        status = f"{g.score:g}/{g.max_score:g}" + (f"  ({g.error.splitlines()[0]})" if g.error else "")
        echo(f"{g.student:<20} {status}")
        for loss in g.kernel_losses:
            echo(f"    ! {loss}")
        for cell, (pts, mx) in g.cells.items():
            echo(f"    {'✓' if pts == mx else '✗'} {cell:<24} {pts:g}/{mx:g}")
    echo(f"grades: {csv_path}\nfeedback: {workspace / 'feedback'}")
    return grades
