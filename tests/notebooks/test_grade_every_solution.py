"""`ladder grade` of every chapter's solution notebook on a CPU, each as the only student of its own
workspace: autograde must run the whole notebook, and no graded cell may fail because of the grader
itself. Three such faults once reached a GPU grading only (a prediction cell nbgrader refused, so a whole
chapter scored 0/0; a hidden cell's `session.has_gpu` asked of the learner's object; copies of one output
undoing each other after timing): this is the CPU half of that net. Without a GPU, cells that need one
fail with their no-GPU reason, which is expected here."""

from __future__ import annotations

import json

import pytest

from conftest import HAS_GPU, ROOT
from grader.notebooks.release import assignments

pytestmark = [pytest.mark.slow, pytest.mark.skipif(HAS_GPU, reason="CPU-only; on a GPU grading_time.py grades them")]

GRADER_FAULTS = ("[reason: failed]", "this is a grader bug", "the grader's checking process ended without a verdict")


@pytest.mark.parametrize("graded_solution", assignments(ROOT), indirect=True)
def test_the_solution_is_graded_whole_without_a_grader_fault(graded_solution):
    """The grading (tests/solution_runs.py) is shared with the chapter's own CPU tests, which read its cells."""
    assert graded_solution.notebook.is_file(), graded_solution.output()
    faults = []
    for cell in graded_solution.cells():
        text = json.dumps(cell.get("outputs", []))
        if any(mark in text for mark in GRADER_FAULTS):
            faults.append((cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"), text[:600]))
    assert not faults, faults
    assert "Traceback (most recent call last)" not in graded_solution.process.stdout, graded_solution.output()
