"""The seam (grader.calls.seam): the learner's function in this process (`LocalFunction`) and in
the grader's worker (`RemoteFunction`) gather the same facts and reach the same verdict, call by call.
The launchers below are the learner's cells, run through grader.learner.code on both sides; each
"kernel" is a launch through grader.cuda.launches, as a Triton kernel's would be, so that this runs
on a CPU."""

from __future__ import annotations

import json
import pickle

import pytest

from grader.cuda.tally import Tally
from grader.errors import CheckFailed, LadderError
from grader.calls import messages
from grader.learner.code import KernelOutcome, run_cell

CELL = r'''
import threading
import torch
from grader.cuda import launches


def _kernel(name, body):
    return launches.dispatch(launches.Launch("triton", name, body, body))


def good(a, out):
    _kernel("double_kernel", lambda: out.copy_(a * 2))


def no_kernel(a, out):
    out.copy_(a * 2)


def torch_then_kernel(a, out):
    doubled = a * 2                     # torch computes on the grader's tensor
    _kernel("copy_kernel", lambda: out.copy_(doubled))


def swallows(a, out):
    def body():
        raise RuntimeError("the kernel failed")
    try:
        _kernel("broken_kernel", body)
    except RuntimeError:
        out.copy_(a * 2)


def leaves_a_thread(a, out):
    _kernel("double_kernel", lambda: out.copy_(a * 2))
    threading.Thread(target=lambda: threading.Event().wait(3), name="late_writer", daemon=True).start()


def leaves_a_process(a, out):
    import subprocess, sys
    _kernel("double_kernel", lambda: out.copy_(a * 2))
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def lazy(a, out):
    _kernel("double_kernel", lambda: out.copy_(a * 2))
    return (x for x in [out])


def raises(a, out):
    raise ValueError("my mistake")


def trailing(a, out, scale):
    _kernel("scale_kernel", lambda: out.copy_(a * scale))
'''

CASES = {   # launcher: the reason its call as a kernel launcher is rejected for (None: accepted)
    "good": None,
    "no_kernel": "kernel-unused",
    "torch_then_kernel": "library-compute",
    "swallows": "swallowed-error",
    "leaves_a_thread": "stray-thread",
    "leaves_a_process": "stray-process",
    "lazy": "not-plain",
    "raises": "raised",
}


def _verdict(fn, *args, **kwargs):
    try:
        fn.call(*args, **kwargs)
    except LadderError as exc:
        return exc.reason
    return None


@pytest.fixture(scope="module")
def both():
    """{"local": {name: LocalFunction}, "remote": {name: RemoteFunction}}, from the same cell."""
    from grader.isolation.remote import RemoteFunction, WorkerHandle
    from grader.calls.seam import as_learner

    ns: dict = {}
    assert run_cell("launchers", CELL, ns) == []
    handle = WorkerHandle()
    try:
        handle.load([("launchers", CELL)], {})
        yield {"local": {name: as_learner(ns[name], name) for name in [*CASES, "trailing"]},
               "remote": {name: RemoteFunction(handle, name) for name in [*CASES, "trailing"]}}
    finally:
        handle.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_both_sides_judge_a_launcher_alike(both, name):
    import torch

    got = {}
    for side, fns in both.items():
        a, out = torch.randn(64), torch.full((64,), float("nan"))
        got[side] = _verdict(fns[name], a, out, launcher=True)
        if got[side] is None:
            torch.testing.assert_close(out, a * 2)
    assert got == {"local": CASES[name], "remote": CASES[name]}


@pytest.mark.slow
def test_the_noop_probe_switches_the_kernel_off_on_both_sides(both):
    import torch

    for side, fns in both.items():
        a, out = torch.randn(16), torch.full((16,), float("nan"))
        fns["good"].call(a, out, launcher=True, noop=True)
        assert torch.isnan(out).all(), f"{side}: the probe's launch ran"
        assert fns["good"].last_facts.launches == ["double_kernel"], side


@pytest.mark.slow
def test_a_call_that_is_not_a_launcher_is_judged_without_the_launcher_rules(both):
    import torch

    for side, fns in both.items():
        a, out = torch.randn(8), torch.zeros(8)
        assert _verdict(fns["no_kernel"], a, out) is None, side


@pytest.mark.slow
def test_trailing_arguments_and_batches_on_both_sides(both):
    import torch

    for side, fns in both.items():
        scaled = fns["trailing"].with_trailing(3.0)
        assert scaled.base().trailing == () and scaled.trailing == (3.0,)
        a, out = torch.randn(32), torch.full((32,), float("nan"))
        scaled.call(a, out, launcher=True)
        torch.testing.assert_close(out, a * 3)
        batch = scaled.batch([(a, out)])
        assert batch.required == frozenset({"scale_kernel"}), side
        assert batch.timed_batch(4) > 0
        assert batch.batches == 1


@pytest.mark.slow
def test_a_batch_that_skips_a_kernel_a_checked_call_ran_is_rejected_on_both_sides(both):
    import torch

    for side, fns in both.items():
        a, out = torch.randn(16), torch.full((16,), float("nan"))
        fns["good"].call(a, out, launcher=True)
        batch = fns["no_kernel"].batch([(a, out)])
        batch.required = frozenset({"double_kernel"})   # what a checked call of this shape launched
        with pytest.raises(CheckFailed) as exc:
            batch.timed_batch(2)
        assert exc.value.reason == "kernel-unused", side


def test_the_job_a_grade_sends_survives_json():
    job = messages.Job([("setup", "import torch"), ("solution", "x = 1")], "assert x == 1", "t",
                       {"solution": KernelOutcome("raised", 3)})
    again = messages.Job.from_json(job.to_json())
    assert again == job
    assert json.loads(job.to_json())["outcomes"] == {"solution": {"status": "raised", "line": 3}}


def test_the_verifier_unpickles_only_plain_data_and_messages():
    import numpy as np

    from grader.isolation.remote import safe_loads

    facts = messages.Facts(launches=["k"], tensor_cores=Tally({"k": 4}))
    reply = safe_loads(pickle.dumps(messages.Called(np.arange(3.0), facts)))
    assert reply.facts == facts and reply.result.tolist() == [0.0, 1.0, 2.0]
    # (tensors travel through torch.multiprocessing's shared memory: tests/isolation/test_isolation.py)
    with pytest.raises(Exception, match="refused"):
        safe_loads(pickle.dumps(CheckFailed))       # a class of the grader's that is not a message
    with pytest.raises(Exception, match="refused"):
        safe_loads(pickle.dumps(print))


def test_a_tampered_process_is_refused_before_any_check(monkeypatch):
    """as_learner asks first, as the verifier does right after loading the learner's cells: a check
    that would stop early (no GPU, a stub) still says `tampered`."""
    import time

    from grader.calls import facts
    from grader.calls.seam import as_learner

    facts.start_watching(again=True)
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    with pytest.raises(CheckFailed) as exc:
        as_learner(lambda: None)
    assert exc.value.reason == "tampered" and "time.perf_counter" in str(exc.value)


def test_a_module_imported_after_watching_began_is_watched_too():
    """A setup cell need not import triton.testing; a later cell that imports and patches it is caught,
    even when the patch copies the real function's name and module (functools.wraps)."""
    import subprocess
    import sys

    code = r'''
import os, functools
os.environ["TRITON_INTERPRET"] = "1"
from grader.calls import facts
facts.start_watching()
import triton.testing
assert facts.tampered() == [], facts.tampered()
real = triton.testing.do_bench
triton.testing.do_bench = functools.wraps(real)(lambda *a, **k: real(*a, **k))
assert facts.tampered() == ["triton.testing.do_bench"], facts.tampered()
class Timer:
    def __call__(self, *a, **k):
        return 1.0
triton.testing.do_bench = Timer()
assert facts.tampered() == ["triton.testing.do_bench"], facts.tampered()
triton.testing.do_bench = real
assert facts.tampered() == []
print("ok")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_watching_a_launchers_torch_ops_does_not_import_dynamo():
    """The torch-op recorder (a TorchDispatchMode) must not pull in torch._dynamo: that import took 6-10 s in
    each fresh check process on an H100 image without a bytecode cache (assets/results/class-grading). Run in a
    fresh interpreter, since another test may have imported it already."""
    import subprocess
    import sys

    probe = (
        "import sys, torch\n"
        "from grader.calls import facts\n"
        "from grader.calls.messages import CallPolicy\n"
        "x = torch.ones(4)\n"
        "call = facts._Call(CallPolicy(), (x,))\n"
        "with facts._op_recorder(call):\n"
        "    scratch = torch.empty_like(x)\n"
        "    y = x * 2\n"
        "assert call.ops == ['aten::mul'], call.ops\n"
        "print('dynamo imported' if 'torch._dynamo' in sys.modules else 'dynamo not imported')\n"
        # once dynamo is loaded (a learner's torch.compile loads it) the recorder keeps out of its compiles,
        # through torch's own guard, and still records
        "import torch._dynamo\n"
        "call = facts._Call(CallPolicy(), (x,))\n"
        "with facts._op_recorder(call):\n"
        "    y = x + 1\n"
        "assert call.ops == ['aten::add'], call.ops\n"
        "print('recorded with dynamo loaded')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == "dynamo not imported recorded with dynamo loaded".split(), done.stdout
