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
