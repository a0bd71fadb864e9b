"""A notebook kernel that dies (or hangs past its timeout) costs the student only that cell.

nbgrader 0.9.6 alone deletes the student's whole autograded notebook when the kernel dies
(test_nbgrader_alone_loses_the_whole_notebook shows it). grader/notebooks/nbexec.py's LadderExecute fails the
one cell, starts a fresh kernel, re-runs the cells before it and carries on; `ladder grade` (through
settings.configure_nbgrader) and `ladder check` (nbrun) both use it.

How these tests were checked against the workaround's removal: with the
`c.Autograde.autograde_preprocessors` line of settings.configure_nbgrader commented out (nbgrader's
stock pipeline), test_autograde_runs_ladder_execute and both `ladder grade` tests fail (`ladder
grade` exits non-zero; killer's autograded notebook and feedback do not exist). With grader/notebooks/check.py
put back to its plain-NotebookClient version (git HEAD before this change), the `ladder check` test
fails: fusion-napkin-test is "not-run" instead of "fail", as is every cell after the death.
"""

import csv
import json
import subprocess
import sys
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from conftest import HAS_GPU, ROOT, ladder_check_one
from submissions.build import build

from grader.notebooks import nbexec
from grader.notebooks.nbexec import DIED, NOT_RUN, TIMED_OUT, LadderExecute

DIE = "import os\nos._exit(7)"


def _test_cell(source, grade_id, points=1):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "locked": True, "points": points,
                                 "schema_version": 3, "solution": False, "task": False}
    return cell


def _run(cells, tmp_path, executor_class=LadderExecute, timeout=60, restarts=3):
    nb = new_notebook(cells=cells)
    c = Config()
    c.Execute.timeout = timeout
    c.Execute.interrupt_on_timeout = True
    c.LadderExecute.max_kernel_restarts = restarts
    c.LadderExecute.kernel_name = "python3"
    c.LadderExecute.isolated_checks = False  # these notebooks test the kernel itself dying or hanging
    executor = executor_class(config=c)
    executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    return nb, executor


def _errors(cell):
    return [o for o in cell.outputs if o.output_type == "error"]


def _text(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _grade(cell):
    from nbgrader.utils import determine_grade
    return determine_grade(cell)[0]


# ---- LadderExecute on small notebooks -----------------------------------------------------------

@pytest.mark.slow
def test_dead_kernel_fails_only_its_cell(tmp_path):
    nb, ex = _run([
        new_markdown_cell("# a notebook"),
        new_code_cell("x = 41\nprint('first run of cell 1')"),
        _test_cell("assert x == 41", "before"),
        new_code_cell(f"y = 1\n{DIE}"),
        _test_cell("assert x == 41\nx += 1", "after-uses-replayed-state"),
        _test_cell("print(y)", "after-needs-lost-name"),
        new_code_cell(f"z = 1\n{DIE}"),      # a second death: the first killer must not be re-run
        _test_cell("assert x == 42", "after-second-death"),
    ], tmp_path)
    cells = nb.cells
    (died,) = _errors(cells[3])
    assert died.ename == DIED
    assert "the notebook's kernel died while running this cell" in died.evalue
    assert "exited with status 7" in died.evalue
    assert _grade(cells[2]) == 1 and _grade(cells[4]) == 1, "graded as usual, before and after the death"
    (missing,) = _errors(cells[5])
    assert missing.ename == "NameError"
    assert "kernel died in cell 4 of the notebook" in missing.traceback[-1], "says why the name is gone"
    assert _grade(cells[5]) == 0
    assert _errors(cells[6])[0].ename == DIED
    # x += 1 in cell 4 ran again during the second replay, so x is 42 in the third kernel too.
    assert _grade(cells[7]) == 1
    assert _text(cells[1]) == "first run of cell 1\n", "replays do not touch recorded outputs"
    assert [c.index for c in ex.crashes] == [3, 6], "the first killer was not replayed"
    assert ex.lost == [3, 6] and ex.stopped is None


@pytest.mark.slow
def test_restarts_are_bounded(tmp_path):
    start = time.monotonic()
    nb, ex = _run([new_code_cell("x = 1"), _test_cell("assert x == 1", "ok")]
                  + [new_code_cell(DIE) for _ in range(4)]
                  + [_test_cell("assert x == 1", "late"), new_markdown_cell("the end")], tmp_path, restarts=2)
    assert time.monotonic() - start < 120
    assert ex.stopped and len(ex.crashes) == 3
    assert [_errors(c)[0].ename for c in nb.cells[2:5]] == [DIED] * 3
    assert "The cells after this one were not run: the kernel died 3 times, more than the 2 restarts " \
        "allowed." in _errors(nb.cells[4])[0].evalue
    for cell in nb.cells[5:7]:
        (err,) = _errors(cell)
        assert err.ename == NOT_RUN and err.evalue.startswith("not run: the kernel died 3 times")
    assert _grade(nb.cells[1]) == 1 and _grade(nb.cells[6]) == 0
    assert nb.cells[7].cell_type == "markdown" and "outputs" not in nb.cells[7]


@pytest.mark.slow
def test_a_kernel_that_will_not_restart_stops_the_run_but_not_the_grading(tmp_path):
    class NoSecondKernel(LadderExecute):
        starts = 0

        def start_new_kernel(self, **kwargs):
            NoSecondKernel.starts += 1
            if NoSecondKernel.starts > 1:
                raise RuntimeError("no more kernels today")
            return super().start_new_kernel(**kwargs)

    nb, ex = _run([new_code_cell("x = 1"), _test_cell("assert x == 1", "ok"), new_code_cell(DIE),
                   _test_cell("assert x == 1", "late")], tmp_path, executor_class=NoSecondKernel)
    assert ex.stopped.startswith("after the kernel was lost, a fresh one would not start")
    assert "no more kernels today" in _errors(nb.cells[2])[0].evalue
    assert _grade(nb.cells[1]) == 1
    assert _errors(nb.cells[3])[0].ename == NOT_RUN and _grade(nb.cells[3]) == 0


@pytest.mark.slow
def test_a_cell_that_ignores_the_interrupt_times_out_alone(tmp_path):
    hang = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)"
    start = time.monotonic()
    nb, ex = _run([new_code_cell("x = 1"), new_code_cell(hang), _test_cell("assert x == 1", "after")],
                  tmp_path, timeout=3)
    assert time.monotonic() - start < 60, "the hung kernel was killed, not waited for"
    (err,) = _errors(nb.cells[1])
    assert err.ename == TIMED_OUT and "ran past the 3 s limit" in err.evalue
    assert _grade(nb.cells[2]) == 1
    assert [c.kind for c in ex.crashes] == ["timed-out"]


@pytest.mark.slow
def test_test_cells_go_through_the_hook_and_a_dying_test_scores_zero(tmp_path):
    seen = []

    class Recording(LadderExecute):
        def run_graded_test_cell(self, cell, index):
            seen.append(cell.metadata.nbgrader.grade_id)
            return super().run_graded_test_cell(cell, index)

    nb, _ = _run([new_code_cell("x = 1"), _test_cell(DIE, "crashes"), _test_cell("assert x == 1", "next")],
                 tmp_path, executor_class=Recording)
    assert seen == ["crashes", "next"]
    assert _errors(nb.cells[1])[0].ename == DIED and _grade(nb.cells[1]) == 0
    assert _grade(nb.cells[2]) == 1


def test_the_error_comes_before_an_execute_result():
    # determine_grade stops at the first error, stderr or execute_result; an execute_result first
    # would mean partial credit for a cell whose kernel died.
    cell = _test_cell("1", "t", points=2)
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    assert _grade(cell) == 2
    nbexec._add_error(cell, nbexec._error_output(DIED, "gone"))
    assert cell.outputs[0].output_type == "error" and _grade(cell) == 0


def test_autograde_runs_ladder_execute():
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from traitlets.utils.importstring import import_item

    from grader.notebooks.settings import EXECUTE_STEP, configure_nbgrader

    c = Config()
    configure_nbgrader(c)
    steps = c.Autograde.autograde_preprocessors
    stock = Autograde.class_traits()["autograde_preprocessors"].default()
    # named, as nbconvert accepts a step: the name is the course's executor
    assert steps == [EXECUTE_STEP if s is Execute else s for s in stock]
    assert import_item(EXECUTE_STEP) is LadderExecute
    assert Execute not in steps


# ---- the chapter-1 student whose kernel dies, through `ladder grade` and `ladder check` ----------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernel-death")
    for name in ("killer", "correct"):
        build("ch01", "01_vector_add", name, tmp / "submissions" / f"{name}.ipynb")
    # In the notebook's kernel (--in-kernel): the killer's own kernel runs its test cells, so the cell
    # whose kernel died loses its point. Isolated grading (the default) is tests/notebooks/test_grading.py,
    # which expects the same score for the killer: 14 of 15 on a GPU, 2 of 3 on a CPU.
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(tmp / "submissions"), "--in-kernel",
                           "--assignment", "01_vector_add", "--workspace", str(tmp / "ws")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    return tmp / "ws", proc


def _cell_scores(ws, student):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook("01_vector_add", "01_vector_add", student)
        return {g.name: float(g.score or 0) for g in sub.grades if g.max_score}


@pytest.mark.slow
def test_grade_keeps_the_other_cells_of_a_dying_notebook(graded):
    """About 25 s on 2 cores: a whole `ladder grade` of a student whose kernel dies, with the fresh kernels that carry
    on."""
    ws, proc = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scores = _cell_scores(ws, "killer")
    assert scores["napkin-test"] == 1, "a cell before the death keeps its point"
    assert scores["fusion-napkin-test"] == 0
    with open(ws / "grades.csv") as fh:
        total = {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)}
    assert total == ({"killer": 14, "correct": 15} if HAS_GPU else {"killer": 2, "correct": 3})
    assert "killer" in proc.stdout and "fusion-napkin-solution: the notebook's kernel died" in proc.stdout


@pytest.mark.slow
def test_grade_writes_the_dying_notebook_and_its_feedback(graded):
    ws, _ = graded
    nb = json.loads((ws / "autograded/killer/01_vector_add/01_vector_add.ipynb").read_text())
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in nb["cells"]}
    (died,) = [o for o in by_id["fusion-napkin-solution"]["outputs"] if o["output_type"] == "error"]
    assert died["ename"] == DIED and "kernel died while running this cell" in died["evalue"]
    (test_error,) = [o for o in by_id["fusion-napkin-test"]["outputs"] if o["output_type"] == "error"]
    assert "kernel died in cell 'fusion-napkin-solution'" in "".join(test_error["traceback"])
    feedback = (ws / "feedback/killer/01_vector_add/01_vector_add.html").read_text()
    assert "kernel died in cell &#39;fusion-napkin-solution&#39;" in feedback \
        or "kernel died in cell 'fusion-napkin-solution'" in feedback
    assert (ws / "feedback/correct/01_vector_add/01_vector_add.html").is_file()
    assert _cell_scores(ws, "correct")["fusion-napkin-test"] == 1, "the other student is unaffected"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's gradebook, on its failure path
def test_nbgrader_alone_loses_the_whole_notebook(tmp_path):
    """Why the workaround exists: nbgrader's stock pipeline on the same student removes the
    autograded notebook and records no point. If this starts failing, nbgrader changed its
    failure path and grader/notebooks/nbexec.py should be looked at again."""
    import shutil

    from nbgrader.apps import NbGraderAPI
    from nbgrader.converters import Autograde

    from grader.classgrade.course import workspace_config

    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "solutions/01_vector_add", ws / "source/01_vector_add")
    build("ch01", "01_vector_add", "killer", ws / "submitted/killer/01_vector_add/01_vector_add.ipynb")
    c = workspace_config(ws)   # the course's own configuration, then nbgrader's stock executor
    c.Autograde.autograde_preprocessors = Autograde.class_traits()["autograde_preprocessors"].default()
    api = NbGraderAPI(config=c)
    assert api.generate_assignment("01_vector_add", force=True, create=True)["success"]
    result = api.autograde("01_vector_add", "killer", force=True, create=True)
    assert not result["success"] and "DeadKernelError" in result["log"]
    assert not (ws / "autograded/killer/01_vector_add/01_vector_add.ipynb").exists()
    assert _cell_scores(ws, "killer").get("napkin-test", 0) == 0


@pytest.mark.slow
def test_check_fails_only_the_cell_after_the_death(tmp_path):
    nb = build("ch01", "01_vector_add", "killer", tmp_path / "killer.ipynb")
    code, report, cells = ladder_check_one(nb)
    assert code == 1
    assert cells["napkin-test"]["outcome"] == "pass"
    assert cells["fusion-napkin-test"]["outcome"] == "fail"
    assert cells["fusion-napkin-test"]["error"]["ename"] == "NameError"
    assert report["error"] is None, "the notebook ran to the end"
    (loss,) = report["kernel_losses"]
    assert "kernel died in cell 'fusion-napkin-solution'" in loss
    later = [c for gid, c in cells.items() if gid.startswith("fused-")]
    assert later and all(c["outcome"] != "not-run" for c in later), "the cells after it still ran"
    if HAS_GPU:
        assert all(c["outcome"] == "pass" for gid, c in cells.items() if gid != "fusion-napkin-test")
