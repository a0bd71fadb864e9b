"""Each chapter's solution notebook executed once per test run: `ladder grade` grades it as the only
student of a workspace of its own, and every test that reads how the solution fares reads that grading
(tests/notebooks/test_grade_every_solution.py for grader faults, each chapter's CPU test for its cells'
verdicts). Executing a notebook costs tens of seconds on a CPU, and the same notebook run twice tells
nothing the first run did not.

A chapter's tests ask for it through the session fixture `graded_solution` (tests/conftest.py), with
the chapter's folder as its parameter:

    @pytest.mark.parametrize("graded_solution", ["04_tensor_cores"], indirect=True)
    def test_...(graded_solution):
        code, nb, cells = graded_solution.as_check()

`as_check` gives the grading in the shape `ladder check --json` gives a notebook (tests/conftest.py's
`ladder_check_one`): the graded cells are scored by the same function `ladder check` uses
(grader.notebooks.check.grade_cells), on the notebook nbgrader autograded. The two paths give one verdict
(the exploit suite holds them to it, cell by cell); this is the grading path's.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT

STUDENT = "solution"


@dataclass
class GradedSolution:
    name: str                       # the chapter's folder, "04_tensor_cores"
    workspace: Path
    process: subprocess.CompletedProcess
    notebook: Path                  # the autograded notebook (absent if grading failed before it)

    def row(self) -> dict:
        """The student's row of grades.csv."""
        with open(self.workspace / "grades.csv") as fh:
            (row,) = [r for r in csv.DictReader(fh) if r["student_id"] == STUDENT]
        return row

    def cells(self) -> list[dict]:
        """The autograded notebook's cells, as JSON."""
        return json.loads(self.notebook.read_text())["cells"]

    def as_check(self) -> tuple[int, dict, dict]:
        """(exit code, notebook report, cells by grade_id), as `ladder check --json` reports one notebook: the
        same NotebookResult, its cells scored by the same function, and the exit status ladder check gives."""
        import nbformat

        from grader.notebooks.check import NotebookResult, grade_cells

        assert self.notebook.is_file(), self.output()
        row = self.row()
        error = None if row["reason"] == "graded" else f"{row['reason']}: {row['reason_message']}"
        result = NotebookResult(str(self.notebook), 1, 0.0, error=error,
                                cells=grade_cells(nbformat.read(str(self.notebook), as_version=4)))
        report = result.as_dict()
        return (0 if result.nothing_lost else 1), report, {c["grade_id"]: c for c in report["cells"]}

    def output(self) -> str:
        return self.process.stdout[-3000:] + self.process.stderr[-3000:]


def grade_solution(name: str, tmp: Path) -> GradedSolution:
    """`ladder grade` of solutions/NAME's notebook as the only student of a workspace under `tmp`."""
    source = next((ROOT / "solutions" / name).glob("*.ipynb"))
    submitted = tmp / "subs" / STUDENT / name
    submitted.mkdir(parents=True)
    shutil.copy(source, submitted / source.name)
    process = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(tmp / "subs"), "--assignment", name,
                              "--workspace", str(tmp / "ws"), "--no-progress"],
                             capture_output=True, text=True, cwd=ROOT, timeout=1500)
    return GradedSolution(name, tmp / "ws", process, tmp / "ws" / "autograded" / STUDENT / name / source.name)
