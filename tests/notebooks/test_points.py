"""Points earned, lost and not checked (grader.notebooks.points), as `ladder check` says them: the reference
solution on a CPU reads "3/3 checked points; 12 points need a GPU" and exits 0, a cell that lost points still
fails, and `--json` carries the same figures."""

from grader.notebooks.check import CellResult, NotebookResult, format_result, score_line
from grader.notebooks.points import Points


def _cell(gid, points, most, reason=None):
    outcome = "pass" if points == most else "fail"
    error = None if outcome == "pass" else {"ename": "CheckFailed", "evalue": f"why\n[reason: {reason}]"}
    return CellResult(gid, points, most, outcome, error, reason=reason)


def _solution_on_a_cpu() -> NotebookResult:
    """Chapter 1's reference solution without a GPU: the napkin cells and the diagnosis pass, every GPU cell
    says no-gpu."""
    cells = [_cell("napkin-test", 1, 1), _cell("fusion-napkin-test", 1, 1), _cell("diagnosis", 1, 1)]
    cells += [_cell(gid, 0, 2, "no-gpu") for gid in ("1a-visible", "1a-hidden", "1a-speed", "1b-visible",
                                                     "1b-hidden", "1b-speed")]
    return NotebookResult("01_vector_add.ipynb", 1, 3.0, cells)


def test_the_reference_solution_on_a_cpu_reads_as_checked_points_and_what_needs_a_gpu():
    r = _solution_on_a_cpu()
    assert not r.passed and r.nothing_lost
    assert score_line(r) == "score 3/15: 3/3 checked points; 12 points need a GPU (not checked here, not lost)"
    assert "FAIL" not in format_result(r)
    record = r.as_dict()
    assert (record["checked_score"], record["checked_max_score"], record["lost_points"]) == (3, 3, 0)
    assert record["not_checked"] == {"no-gpu": 12} and record["nothing_lost"] and not record["passed"]


def test_a_cell_that_lost_points_fails_and_says_apart_what_was_not_checked():
    r = _solution_on_a_cpu()
    r.cells[0] = _cell("napkin-test", 0, 1, "wrong-result")
    r.cells.append(_cell("7b-speed", 0, 2, "not-gradable"))
    assert not r.nothing_lost
    assert score_line(r) == ("score 2/17  FAIL: 1 point lost; 12 points need a GPU; 2 points are not gradable on "
                             "this GPU")


def test_full_marks_pass_and_a_notebook_that_did_not_run_loses():
    full = NotebookResult("x.ipynb", 1, 1.0, [_cell("a", 2, 2), _cell("b", 1, 1)])
    assert full.passed and score_line(full) == "score 3/3  PASS"
    broken = _solution_on_a_cpu()
    broken.error = "the kernel died more often than the restarts allowed"
    assert not broken.nothing_lost


def test_points_add_up_per_reason_and_say_it_in_words():
    p = Points.of([(1, 1, None), (0, 2, "no-gpu"), (1, 2, "unchecked"), (0, 3, "wrong-result"), (0, 2, "no-gpu")])
    assert (p.earned, p.total, p.unchecked, p.checked, p.lost) == (2, 10, 5, 5, 3)
    assert p.why_not_checked() == "4 points need a GPU; 1 point could not be checked here"
    assert p.describe() == "2/5 checked points; 4 points need a GPU; 1 point could not be checked here"
    assert Points.of([(2, 2, None)]).describe() == "2/2"
