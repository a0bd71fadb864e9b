"""Kernels forked from the kernel server (grader.notebooks.warm_kernels) are the kernels jupyter_client would start:
the same folder, environment and import path, the asking process's own children in sessions of their own, their
deaths told by their exit status; and a kernel that cannot be forked is started the usual way."""

import json
import os
import subprocess
import sys

import pytest
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from grader import processes
from grader.notebooks import warm_kernels
from grader.notebooks.nbexec import DIED, LadderExecute

# What a kernel reports about itself, beside what only a forked one could get wrong.
REPORT = """
import json, os, sys
print(json.dumps({
    "cwd": os.getcwd(),
    "path": sys.path,
    "marker": os.environ.get("LADDER_WARM_MARKER"),
    "jpy_parent_is_parent": os.environ.get("JPY_PARENT_PID") == str(os.getppid()),
    "own_session": os.getsid(0) == os.getpid(),
    "main": sys.modules["__main__"].__name__,
    "pid": os.getpid(),
    "ppid": os.getppid(),
}))
"""


def _report(folder, manager_class) -> dict:
    nb = new_notebook(cells=[new_code_cell(REPORT)])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=manager_class, timeout=60,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    return json.loads(nb.cells[0].outputs[0]["text"])


@pytest.fixture
def subreaper():
    """The asking process adopts the forked kernel (grader.notebooks.nbexec makes itself one before its first kernel)."""
    assert processes.become_subreaper()


def test_a_forked_kernel_has_the_folder_environment_and_import_path_of_a_started_one(tmp_path, monkeypatch,
                                                                                    subreaper):
    monkeypatch.setenv("LADDER_WARM_MARKER", "from the asking process")
    started = _report(tmp_path, AsyncKernelManager)
    forked = _report(tmp_path, warm_kernels.WarmKernelManager)
    assert warm_kernels.server_pid() is not None, "the kernel was not forked from the server"
    assert forked["ppid"] == os.getpid(), "a forked kernel is the asking process's child, as a started one is"
    for report in (started, forked):
        assert report["cwd"] == str(tmp_path)
        assert report["marker"] == "from the asking process"
        assert report["jpy_parent_is_parent"] and report["own_session"]
    assert forked["path"] == started["path"]
    assert forked["main"] == started["main"]


def test_a_changed_import_path_gets_a_server_of_its_own(tmp_path, monkeypatch, subreaper):
    _report(tmp_path, warm_kernels.WarmKernelManager)
    first = warm_kernels.server_pid()
    extra = tmp_path / "extra"
    extra.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(extra) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    forked = _report(tmp_path, warm_kernels.WarmKernelManager)
    assert warm_kernels.server_pid() not in (None, first)
    assert str(extra) in forked["path"]


def test_a_forked_kernel_that_dies_is_told_by_its_signal(tmp_path, subreaper):
    """nbexec tells how a kernel died from its exit status, which only the kernel's parent can collect."""
    nb = new_notebook(cells=[new_code_cell("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")])
    config = Config()
    config.LadderExecute.kernel_name = "python3"
    config.LadderExecute.isolated_checks = False
    executor = LadderExecute(config=config)
    assert executor.kernel_manager_class is warm_kernels.WarmKernelManager
    executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert error["ename"] == DIED
    assert "killed by SIGSEGV" in error["evalue"], error["evalue"]
    assert "last code cell" in error["evalue"], "no fresh kernel is started when no cell is left to run"


@pytest.mark.parametrize("cmd, fits", [
    ([sys.executable, "-m", "ipykernel_launcher", "-f", "c.json"], True),
    ([sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "c.json"], True),
    ([sys.executable, "-m", "other_kernel", "-f", "c.json"], False),
    (["/bin/sh", "-m", "ipykernel_launcher", "-f", "c.json"], False),
    ([sys.executable, "script.py", "-m", "ipykernel_launcher"], False),
])
def test_only_ipykernel_under_this_interpreter_is_forked(cmd, fits, subreaper):
    assert warm_kernels.fits(cmd) is fits


def test_a_process_that_adopts_nothing_starts_its_kernels_the_usual_way(tmp_path):
    """Forked by a process that is no subreaper, a kernel would be adopted by init and its exit status lost: such a
    process starts its kernel as jupyter_client does."""
    code = ("import sys; from grader.notebooks import warm_kernels; "
            "print(warm_kernels.fits([sys.executable, '-m', 'ipykernel_launcher', '-f', 'c.json']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_forked_kernel_shut_down_runs_its_atexit_functions_and_exits_cleanly(tmp_path, subreaper):
    """A forked kernel skips only the interpreter's teardown of its modules at exit (about a second of CPU once torch is
    imported): a learner's atexit function still runs, a file left open is written out, and the status is 0."""
    mark = tmp_path / "atexit.txt"
    unclosed = tmp_path / "unclosed.txt"
    code = (f"import atexit, torch\natexit.register(lambda: open({str(mark)!r}, 'w').write('ran'))\n"
            # held where IPython's own exit does not let go of it (it clears the notebook's names, closing their files)
            f"import sys\nsys.kept_by_learner = open({str(unclosed)!r}, 'w')\nsys.kept_by_learner.write('buffered')")
    nb = new_notebook(cells=[new_code_cell(code)])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=warm_kernels.WarmKernelManager,
                            timeout=60, resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        process = client.km.provisioner.process
        assert isinstance(process, warm_kernels.ForkedKernel)
    assert process.returncode == 0
    assert mark.read_text() == "ran"
    assert unclosed.read_text() == "buffered", "a file the learner never closed is written out, as at any exit"
