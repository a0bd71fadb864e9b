"""Where a student's grading time went (grader.classgrade.timing), read from a hand-made executed
notebook: a check's seconds come from the grader's stamp, a cell's from nbclient's, a check that ran
ahead costs only its wait, and a cell without stamps is not invented."""

import json

import pytest

from grader.classgrade.timing import breakdown


def _cell(source, grade_id=None, execution=None, ladder=None, kind="code"):
    meta = {}
    if grade_id:
        meta["nbgrader"] = {"grade_id": grade_id}
    if execution:
        meta["execution"] = execution
    if ladder:
        meta["ladder"] = ladder
    return {"cell_type": kind, "metadata": meta, "source": source}


NOTEBOOK = {"cells": [
    _cell("# Setup", kind="markdown"),
    _cell(["\n", "import torch\n", "x = 1\n"], execution={"iopub.status.busy": "2026-11-27T06:00:00.000Z",
                                                         "iopub.status.idle": "2026-11-27T06:00:02.500Z"}),
    _cell("check_a()", "a-speed", ladder={"check_seconds": 10.0, "load_seconds": 4.0, "ahead": True, "wait_seconds": 1.5}),
    _cell("check_b()", "b-visible", ladder={"check_seconds": 3.0, "load_seconds": 2.0}),
    _cell("print(2)", execution={"shell.execute_reply": "2026-11-27T06:00:09+00:00"}),   # no start: not timed
    _cell("y = 2", execution={"iopub.execute_input": "2026-11-27T06:00:10+00:00",
                              "shell.execute_reply": "2026-11-27T06:00:10.250000+00:00"}),
]}


def test_every_timed_code_cell_is_read_with_its_name_and_kind():
    cells = breakdown(NOTEBOOK).cells
    assert [(c.index, c.name, c.kind, c.seconds) for c in cells] == [
        (1, "cell 2: import torch", "cell", 2.5), (2, "a-speed", "check", 10.0), (3, "b-visible", "check", 3.0),
        (5, "cell 6: y = 2", "cell", 0.25)]
    assert cells[1].ahead and cells[1].wait_seconds == 1.5 and not cells[2].ahead and cells[2].wait_seconds is None


def test_totals_count_a_check_ahead_by_its_wait_only():
    found = breakdown(NOTEBOOK)
    assert found.kernel_seconds == pytest.approx(2.75)
    assert (found.check_seconds, found.load_seconds, found.wait_seconds) == (13.0, 6.0, 4.5)
    assert [c.name for c in found.top(2)] == ["a-speed", "b-visible"]
    assert found.as_dict()["check_wait_seconds"] == 4.5 and len(found.as_dict()["cells"]) == 4


def _speed_cell(grade_id, rounds, seconds, stopped=None):
    record = {"key": "1a", "ratio": 0.9, "bar": 0.7, "passed": True, "rounds": rounds, "timing_s": seconds}
    if stopped:
        record["stopped"] = stopped
    cell = _cell("check_speed()", grade_id, ladder={"check_seconds": seconds + 5, "load_seconds": 2.5}) | {
        "execution_count": 1, "id": grade_id}
    cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                        "text": f"✓ 1a speed\n[speed: {json.dumps(record, separators=(',', ':'))}]\n"}]
    return cell


def test_a_speed_cell_that_ran_its_whole_budget_is_named_among_the_reasons():
    """The speed record's rounds and seconds reach the journal's split, and a comparison that ran the whole round
    budget (its spread never reached the target) is given as a reason a student took long; one that stopped
    early is kept but not named."""
    import nbformat

    from grader.classgrade.timing import reasons, student_split
    from grader.config import SPEED_ROUND_BUDGET_S

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(c) for c in (_speed_cell("a-speed", 6, 3.2),
                                                  _cell("x = 1", "a-visible") | {"outputs": [], "execution_count": 2, "id": "plain"})]
    quick = student_split(nbformat.writes(nb).encode(), 30.0, 1.0, 2, 0.0, 0.0, {})
    assert quick["speed_timing"] == [["a-speed", 6, 3.2, None]] and quick["check_load_seconds"] == 2.5
    assert not any("budget" in r for r in reasons(quick))
    nb.cells.append(nbformat.from_dict(_speed_cell("b-speed", 25, SPEED_ROUND_BUDGET_S + 0.4)))
    slow = student_split(nbformat.writes(nb).encode(), 30.0, 1.0, 2, 0.0, 0.0, {})
    assert "speed cells timed to their budget (a-speed 6 rounds in 3 s, b-speed 25 rounds in 20 s)" in reasons(slow)
    # a record that says what ended its rounds is read by that, not by its seconds
    nb.cells[-1] = nbformat.from_dict(_speed_cell("b-speed", 9, 21.0, stopped="verdict"))
    settled = student_split(nbformat.writes(nb).encode(), 30.0, 1.0, 2, 0.0, 0.0, {})
    assert settled["speed_timing"][-1] == ["b-speed", 9, 21.0, "verdict"]
    assert not any("budget" in r for r in reasons(settled))
    nb.cells[-1] = nbformat.from_dict(_speed_cell("b-speed", 12, 12.5, stopped="budget"))
    budget = student_split(nbformat.writes(nb).encode(), 30.0, 1.0, 2, 0.0, 0.0, {})
    assert "speed cells timed to their budget (a-speed 6 rounds in 3 s, b-speed 12 rounds in 12 s)" in reasons(budget)
