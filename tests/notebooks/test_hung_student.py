"""A synthetic student whose function hangs, graded through the notebook executor: its first check waits out
one time limit, later checks that call the function fail at once and say why, and a cell that does not call
it is graded (grader.isolation.hung, grader.notebooks.nbexec)."""

from __future__ import annotations

import pytest
from nbformat.v4 import new_notebook

from isolation.test_checks_ahead import _cell, _execute

LIMIT_S = 5


def _hanger():
    return new_notebook(cells=[
        _cell("def spin(x):\n    while x:\n        pass\n    return x\n\ndef add_one(x):\n    return x + 1\n",
              "solution", test=False),
        _cell("assert spin(1) == 1\n", "spin-visible", test=True),
        _cell("assert add_one(1) == 2\nprint('add_one ok')\n", "add-visible", test=True),
        _cell("assert spin(2) == 2\n", "spin-hidden", test=True),
        _cell("assert spin(3) == 3\n", "spin-speed", test=True),
    ])


@pytest.mark.slow
@pytest.mark.parametrize("at_once", [1, 3])
def test_a_hanging_student_costs_one_time_limit_then_immediate_verdicts(tmp_path, monkeypatch, at_once):
    monkeypatch.setenv("LADDER_FIRST_CALL_TIMEOUT_S", str(LIMIT_S))
    monkeypatch.setenv("LADDER_CALL_TIMEOUT_S", str(LIMIT_S))
    nb = _execute(tmp_path, monkeypatch, at_once, _hanger())

    cells = {cell.metadata["nbgrader"]["grade_id"]: cell for cell in nb.cells if cell.metadata["nbgrader"]["grade"]}
    errors = {gid: [o.evalue for o in cell.outputs if o.output_type == "error"] for gid, cell in cells.items()}
    assert errors["add-visible"] == [], errors["add-visible"]   # graded: it does not call the hung function
    for gid in ("spin-visible", "spin-hidden", "spin-speed"):
        assert len(errors[gid]) == 1 and "[reason: timed-out]" in errors[gid][0], (gid, errors[gid])
    # the first check to call it alone waited out the limit; the later ones did not, and say why
    first = cells["spin-visible"].metadata["ladder"]
    assert not first["ahead"] and first["check_seconds"] >= LIMIT_S
    assert "timed out after" in errors["spin-visible"][0]
    for gid in ("spin-hidden", "spin-speed"):
        assert "timed out in an earlier check" in errors[gid][0], errors[gid][0]
        assert cells[gid].metadata["ladder"]["check_seconds"] < LIMIT_S, cells[gid].metadata["ladder"]
    assert nb.metadata["ladder"]["hung"] == ["spin"]

    # The class summary counts the one limit waited out apart from the verdicts given at once.
    import nbformat

    from grader.classgrade.timing import reasons, student_split

    split = student_split(nbformat.writes(nb).encode(), 30.0, 1.0, 2, 0.0, 0.0, {})
    assert split["timed_out"] == ["spin-visible", "spin-hidden", "spin-speed"], split
    assert split["answered_at_once"] == ["spin-hidden", "spin-speed"], split
    assert "hung (spin; 1 cell(s) waited out the time limit, 2 more failed at once as timed out)" in reasons(split)
