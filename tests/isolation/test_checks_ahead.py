"""A notebook's graded checks run ahead of it (grader.isolation.ahead), in the run's sessions, and give every cell
the verdict and output it gets when each check runs as its cell is reached: a check that times is run again alone,
and so is one whose learner cells did not end in the kernel as the check ahead assumed."""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from grader import config
from grader.notebooks.nbexec import LadderExecute


def _cell(source: str, grade_id: str, test: bool):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": test, "grade_id": grade_id, "locked": test, "points": 1 if test else 0,
                                 "schema_version": 3, "solution": not test, "task": False}
    return cell


def _notebook():
    return new_notebook(cells=[
        _cell("def square(x):\n    return x * x\n", "square", test=False),
        _cell("assert square(3) == 9\nprint('square ok')\n", "square-test", test=True),
        _cell("assert square(4) == 17, 'square(4) should be 16, says this test'\n", "wrong-test", test=True),
        _cell("from grader.harness.timing import CPUBackend\n"
              "ms = CPUBackend(min_run_time_s=0.001).times_ms(lambda: square(3))\nprint('timed', len(ms) > 0)\n",
              "timing-test", test=True),
        _cell("def cube(x):\n    return x * square(x)\nraise ValueError('this cell raises in the kernel')\n",
              "cube", test=False),
        _cell("assert cube(2) == 8\nprint('cube ok')\n", "cube-test", test=True),
    ])


def _execute(tmp_path, monkeypatch, at_once: int, nb=None):
    """`nb` (this file's notebook by default) executed for grading, `at_once` checks at a time, each in a session of
    the run's."""
    monkeypatch.setenv("LADDER_CHECKS_AT_ONCE", str(at_once))
    config.unpin()
    c = Config()
    c.LadderExecute.kernel_name = "python3"
    c.LadderExecute.isolated_checks = True
    c.Execute.timeout = 120
    nb = nb or _notebook()
    LadderExecute(config=c).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    return nb


def _seen(nb) -> dict:
    """Per test cell: its error (name, first line) or None, and what it printed."""
    out = {}
    for cell in nb.cells:
        if cell.metadata["nbgrader"]["grade"]:
            errors = [(o.ename, o.evalue.splitlines()[0]) for o in cell.outputs if o.output_type == "error"]
            printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            out[cell.metadata["nbgrader"]["grade_id"]] = (errors[0] if errors else None, printed)
    return out


@pytest.mark.slow
def test_checks_ahead_give_the_verdicts_of_checks_run_one_by_one(tmp_path, monkeypatch):
    one_by_one = _execute(tmp_path, monkeypatch, 1)
    assert "checks_ahead" not in one_by_one.metadata.get("ladder", {})
    ahead = _execute(tmp_path, monkeypatch, 3)

    assert _seen(ahead) == _seen(one_by_one)
    seen = _seen(ahead)
    assert seen["square-test"] == (None, "square ok\n")
    assert seen["wrong-test"][0] is not None and "should be 16" in seen["wrong-test"][0][1]
    assert seen["timing-test"] == (None, "timed True\n")
    # The cell that raised stops where it raised, in the kernel and in the check: cube is defined.
    assert seen["cube-test"] == (None, "cube ok\n")

    summary = ahead.metadata["ladder"]["checks_ahead"]
    assert summary["at_once"] == 3
    assert sorted(summary["used"]) == ["square-test", "wrong-test"]
    assert summary["checked_again"] == {"timing-test": "deferred ahead",
                                        "cube-test": "a learner cell before it raised or took the kernel down"}
    marks = {c.metadata["nbgrader"]["grade_id"]: c.metadata["ladder"]["ahead"]
             for c in ahead.cells if c.metadata["nbgrader"]["grade"]}
    assert marks == {"square-test": True, "wrong-test": True, "timing-test": False, "cube-test": False}
    # One by one, one pair checked every cell. Ahead, three sessions took the first three checks at once and
    # no session was started again: the timing check, deferred, was checked again alone in its own session
    # (reserved for it), and the check run again with the kernel's outcome of the cell that raised went to
    # the session whose worker had not run that cell (the check ahead of it had assumed it ran as it reads).
    assert one_by_one.metadata["ladder"]["check_sessions"] == 1
    assert ahead.metadata["ladder"]["check_sessions"] == 3


@pytest.mark.slow
def test_two_sessions_both_kept_for_deferred_checks_do_not_stall_the_notebook(tmp_path, monkeypatch):
    """Two sessions, and the first two checks ahead both time: each is deferred and keeps its session for the
    notebook, so the next check ahead has none to take until the notebook has checked the first of them again.
    The run still ends, with every verdict, and no session is started again."""
    timing = ("from grader.harness.timing import CPUBackend\n"
              "ms = CPUBackend(min_run_time_s=0.001).times_ms(lambda: square(3))\nprint('timed', len(ms) > 0)\n")
    nb = new_notebook(cells=[
        _cell("def square(x):\n    return x * x\n", "square", test=False),
        _cell(timing, "timing-a", test=True),
        _cell(timing, "timing-b", test=True),
        _cell("assert square(3) == 9\nprint('square ok')\n", "square-test", test=True),
    ])
    ran = _execute(tmp_path, monkeypatch, 2, nb=nb)
    assert _seen(ran) == {"timing-a": (None, "timed True\n"), "timing-b": (None, "timed True\n"),
                          "square-test": (None, "square ok\n")}
    summary = ran.metadata["ladder"]["checks_ahead"]
    assert summary["checked_again"] == {"timing-a": "deferred ahead", "timing-b": "deferred ahead"}
    assert summary["used"] == ["square-test"]
    assert ran.metadata["ladder"]["check_sessions"] == 2
