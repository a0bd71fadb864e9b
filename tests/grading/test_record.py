"""The recording half of `ladder grade` (grader.classgrade.record) on its own: the Execute step that
copies a worker's outputs into nbgrader's pipeline, and the kernel losses read from an autograded
notebook. The class tests reach both only through whole gradings, where a cell copied from the wrong
notebook, or a loss not reported, would still give plausible scores."""

import json

import nbformat
import pytest

from grader.classgrade.record import ExecutedElsewhere, kernel_losses
from grader.errors import LadderError


def _notebook(*sources, outputs=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    for cell, out in zip(nb.cells, outputs or []):
        cell.outputs = out
        cell.execution_count = 1
    return nb


def _executed(tmp_path, nb):
    folder = tmp_path / "executed" / "alice" / "01_vector_add"
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / "01_vector_add.ipynb"))
    step = ExecutedElsewhere(executed_dir=str(tmp_path / "executed"))
    return step, {"nbgrader": {"student": "alice", "assignment": "01_vector_add", "notebook": "01_vector_add"}}


def test_the_workers_outputs_and_timings_are_copied_cell_for_cell(tmp_path):
    printed = [nbformat.v4.new_output("stream", name="stdout", text="✓ 1a\n")]
    ran = _notebook("x = 1", "print('✓ 1a')", outputs=[[], printed])
    ran.cells[1].metadata["ladder"] = {"seconds": 2.5}
    step, resources = _executed(tmp_path, ran)
    nb, _ = step.preprocess(_notebook("x = 1", "print('✓ 1a')"), resources)
    assert nb.cells[1].outputs == printed and nb.cells[1].execution_count == 1
    assert nb.cells[1].metadata["ladder"] == {"seconds": 2.5} and "ladder" not in nb.cells[0].metadata


@pytest.mark.parametrize("prepared", [("x = 1", "print('changed')"), ("x = 1",), ("x = 1", "print('✓ 1a')", "y = 2")])
def test_a_notebook_that_is_not_the_prepared_one_is_refused(tmp_path, prepared):
    step, resources = _executed(tmp_path, _notebook("x = 1", "print('✓ 1a')"))
    with pytest.raises(LadderError, match="not the one this workspace prepared"):
        step.preprocess(_notebook(*prepared), resources)


def _error(ename, evalue):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def test_kernel_losses_name_the_cell_and_the_first_sentence(tmp_path):
    nb = _notebook("a", "b", "c", "d", outputs=[
        [_error("DeadKernelError", "the notebook's kernel died. It was restarted")],
        [_error("CellTimeoutError", "")],                  # nbgrader's own timeout: the kernel lived
        [_error("AssertionError", "wrong values")],        # a failed check, not a loss
        [_error("NotRun", "not run: an earlier cell stopped the notebook. Run it again")],
    ])
    nb.cells[3].metadata["nbgrader"] = {"grade_id": "vector-add-speed"}
    path = tmp_path / "graded.ipynb"
    path.write_text(json.dumps(nb))
    assert kernel_losses(path) == ["cell 1: the notebook's kernel died",
                                   "vector-add-speed: not run: an earlier cell stopped the notebook"]


def test_no_autograded_notebook_means_no_losses(tmp_path):
    assert kernel_losses(tmp_path / "missing.ipynb") == []


def test_a_feedback_page_never_shows_the_hidden_tests(tmp_path):
    """A student's feedback, made by nbgrader from the notebook a worker executed (the recording path of `ladder
    grade`), keeps the visible part of a test cell and nothing of its hidden tests: not their source (the sizes a
    learner has not seen), not a traceback line that quotes them. nbgrader's own feedback step showed both."""
    from pathlib import Path

    from conftest import ROOT
    from grader.classgrade.identity import files_sha256, folder_files, sha256
    from grader.classgrade.job import StudentJob, StudentResult
    from grader.classgrade.record import Workspace
    from grader.notebooks.hidden import HIDDEN_LINE

    source_nb = ROOT / "solutions" / "01_vector_add" / "01_vector_add.ipynb"
    submitted = source_nb.read_bytes()   # its test cells are what autograde restores, hidden tests included
    executed = nbformat.reads(submitted.decode(), as_version=4)
    (cell,) = [c for c in executed.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "vector-add-hidden"]
    hidden = next(line for line in cell.source.splitlines() if "correct_1a_hidden" in line)
    assert "33_554_433" in hidden
    # an IPython traceback of the hidden line, coloured as IPython colours it
    coloured = hidden.replace("correct_1a_hidden", "correct_1a_hidden \x1b[38;5;241m").replace("ch01", "\x1b[39mch01")
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="wrong at index 7", traceback=[
        "\x1b[0;31mAssertionError\x1b[0m  Traceback (most recent call last)",
        f"Cell \x1b[0;32mIn[12], line 5\x1b[0m\n\x1b[1;32m----> 5\x1b[0m {coloured}\n", "AssertionError: wrong at index 7"])]
    source = folder_files(source_nb.parent)
    job = StudentJob("01_vector_add", source_nb.name, "ann", submitted, sha256(submitted), source,
                     files_sha256(source), None, "grader")
    ws = Workspace(tmp_path / "ws", "01_vector_add", source_nb.name)
    try:
        ws.prepare(source)
        grade = ws.record(job, StudentResult("ann", nbformat.writes(executed).encode(), 1.0, "here", "grader"), 1, [])
    finally:
        ws.close()
    assert grade.error is None and grade.feedback is not None, grade
    page = Path(grade.feedback).read_text()
    assert "correct_1a_small" in page   # the visible test stays
    assert "HIDDEN TESTS" not in page and "correct_1a_hidden" not in page and "33_554_433" not in page
    assert HIDDEN_LINE in page and "wrong at index 7" in page   # the error itself is kept


def test_nbgraders_own_feedback_command_hides_the_hidden_tests_too():
    """`nbgrader generate_feedback` and the formgrader read nbgrader_config.py, which applies the same settings."""
    from traitlets.config import Config

    from conftest import ROOT
    from grader.notebooks.hidden import HideHiddenTests

    c = Config()
    path = ROOT / "nbgrader_config.py"
    exec(compile(path.read_text(), path.name, "exec"), {"get_config": lambda: c, "__file__": str(path)})
    assert HideHiddenTests in c.GenerateFeedback.preprocessors
