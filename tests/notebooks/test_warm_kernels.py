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

from conftest import FIRST_COMPARISON
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


def test_a_forked_kernels_first_comparison_imports_nothing(tmp_path, subreaper):
    """The server makes the imports of torch's first `assert_close` before it forks: every kernel's first correctness
    check paid 0.8 s of CPU for them (torch.distributed.tensor and sympy)."""
    nb = new_notebook(cells=[new_code_cell(FIRST_COMPARISON)])
    NotebookClient(nb, kernel_name="python3", kernel_manager_class=warm_kernels.WarmKernelManager, timeout=60,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert warm_kernels.server_pid() is not None, "the kernel was not forked from the server"
    assert nb.cells[0].outputs[0]["text"].strip() == "imported by the first comparison: []"


def test_a_file_open_before_the_server_froze_its_heap_is_written_out_at_exit(tmp_path):
    """The kernel server freezes its heap before forking (gc.freeze: a forked kernel's collections then skip torch's
    objects), and gc.get_objects no longer lists what it froze: the files open before the freeze are remembered and
    flushed at a kernel's exit with those opened later."""
    import gc
    import weakref

    before = open(tmp_path / "before.txt", "w")   # noqa: SIM115  (left open, as a learner might)
    after = None
    try:
        warm_kernels._PRELOADED_FILES.append(weakref.ref(before))
        gc.freeze()
        assert not any(obj is before for obj in gc.get_objects()), "frozen objects are not listed"
        after = open(tmp_path / "after.txt", "w")   # noqa: SIM115
        before.write("opened before the freeze")
        after.write("opened after it")
        warm_kernels._flush_open_files()
        assert (tmp_path / "before.txt").read_text() == "opened before the freeze"
        assert (tmp_path / "after.txt").read_text() == "opened after it"
    finally:
        gc.unfreeze()
        warm_kernels._PRELOADED_FILES.pop()
        before.close()
        if after is not None:
            after.close()


class _IOPub:
    """An IOPub channel that holds the given messages, and records how long each read was allowed to wait."""

    def __init__(self, messages):
        self.messages, self.waits = list(messages), []

    async def get_msg(self, timeout=None):
        from queue import Empty

        self.waits.append(timeout)
        if not self.messages:
            raise Empty
        return self.messages.pop(0)


def _status(state: str, parent: str) -> dict:
    return {"msg_type": "status", "content": {"execution_state": state}, "parent_header": {"msg_id": parent}}


@pytest.mark.parametrize("messages, ready", [
    ([_status("busy", "ask"), _status("idle", "ask")], True),
    ([{"msg_type": "iopub_welcome", "content": {}, "parent_header": {}}, _status("idle", "ask")], False),
    ([_status("idle", "an earlier request"), _status("idle", "ask")], True),
    ([_status("busy", "ask")], False),
    ([], False),
], ids=["idle", "welcome-first", "another-request-first", "no-idle", "silent"])
def test_the_kernel_is_ready_when_iopub_carries_the_idle_of_its_kernel_info(messages, ready):
    """PromptKernelClient: ready at the idle status of the kernel_info request it sent, never after a quiet period.
    The kernel's welcome on IOPub means this client's subscription has just arrived, and what the kernel said before
    may be lost: it asks again. Without any message, it asks again after 0.2 s, as jupyter_client does."""
    import asyncio

    client = warm_kernels.PromptKernelClient()
    iopub = _IOPub(messages)
    client._iopub_channel = iopub
    assert asyncio.run(client._idle_after("ask")) is ready
    assert set(iopub.waits) == {0.2}


def test_a_started_kernel_leaves_nothing_on_iopub_before_the_first_cell(tmp_path, subreaper):
    """After the prompt wait for readiness, IOPub holds nothing of the kernel's start: the first cell's messages are
    the first read."""
    import asyncio
    from queue import Empty

    async def start_and_look():
        km = warm_kernels.WarmKernelManager(kernel_name="python3")
        await km.start_kernel(cwd=str(tmp_path))
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)
            with pytest.raises(Empty):
                await kc.iopub_channel.get_msg(timeout=0.3)
            reply = await kc.execute_interactive("print('first')", timeout=60)
            assert reply["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
            await km.shutdown_kernel()

    asyncio.run(start_and_look())
