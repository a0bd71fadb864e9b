"""The grader tells the processes that run a notebook for it that they do (config.grader_run): the notebook's kernel,
by a request before its first cell, and each isolated check, by its Job. Nothing of it travels in the environment,
which the learner's processes would pass on."""

from __future__ import annotations

import os

from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from grader import config
from grader.notebooks.nbexec import LadderExecute


def _cell(source: str, grade_id: str, test: bool):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": test, "grade_id": grade_id, "locked": test, "points": 1 if test else 0,
                                 "schema_version": 3, "solution": not test, "task": False}
    return cell


def _printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_the_kernel_and_every_check_know_the_grader_runs_them_and_the_environment_does_not_say(tmp_path, monkeypatch):
    monkeypatch.setenv("LADDER_CHECKS_AT_ONCE", "1")
    config.unpin()
    for isolated in (False, True):
        nb = new_notebook(cells=[
            _cell("import os\nfrom grader import config\n"
                  "print('kernel', config.grader_run(), sorted(k for k in os.environ if k.startswith('LADDER_')))\n",
                  "setup", test=False),
            _cell("from grader import config\nprint('check', config.grader_run())\n", "run-test", test=True),
        ])
        c = Config()
        c.LadderExecute.kernel_name = "python3"
        c.LadderExecute.isolated_checks = isolated
        c.Execute.timeout = 120
        LadderExecute(config=c).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
        ours = sorted(k for k in os.environ if k.startswith("LADDER_"))   # the settings, passed on as they are
        assert _printed(nb.cells[0]) == f"kernel True {ours}\n", isolated
        assert _printed(nb.cells[1]) == "check True\n", isolated
    assert not config.grader_run()   # the process that ran the notebook is not told it runs in one
