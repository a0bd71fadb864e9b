"""A check run beside others on one GPU (grader.cuda.sharing) is deferred at the first thing it would time,
on the verifier's side (timed batches, ceilings) and the worker's (an autotuner timing its configurations, a
fact of the call), even when code on the way catches the exception; a check that times nothing gives its
usual verdict."""

from __future__ import annotations

import pytest

from grader.cuda import sharing
from grader.harness.timing import CPUBackend
from grader.isolation import isolate

TIME_IT = "from grader.harness.timing import CPUBackend\nCPUBackend(min_run_time_s=0.001).times_ms(lambda: square(3))\n"
SQUARE = ("setup", "def square(x):\n    return x * x\n")

# An autotuned Triton kernel (the interpreter on a CPU) behind a launcher that swallows whatever it raises.
AUTOTUNED = '''
import torch, triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

def double(x, out):
    try:
        double_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
    except BaseException:
        pass
'''
CALL_IT = "import torch\nx = torch.arange(40.0)\nout = torch.empty_like(x)\ndouble(x, out)\n"


@pytest.fixture
def shared():
    sharing.set_shared(True)
    sharing.clear()
    yield
    sharing.set_shared(False)
    sharing.clear()


def test_timing_on_a_shared_gpu_raises_and_is_remembered(shared):
    with pytest.raises(sharing.NeedsOwnGPU):
        CPUBackend(min_run_time_s=0.001).times_ms(lambda: None)
    assert sharing.deferred() == "timing"
    sharing.set_shared(False)
    sharing.clear()
    assert len(CPUBackend(min_run_time_s=0.001).times_ms(lambda: None)) > 0 and sharing.deferred() is None


def test_a_call_that_would_have_timed_defers_the_check_by_its_facts_whatever_the_verifier_was_told():
    """The worker's fact (Facts.needs_own_gpu) is judged by the rule every call's facts pass (rules.enforce),
    before any other rule, and remembered as the check's deferral."""
    from grader.calls import rules
    from grader.calls.messages import Facts

    sharing.clear()
    try:
        with pytest.raises(sharing.NeedsOwnGPU):
            rules.enforce(Facts(needs_own_gpu="autotuning `k`", tampered=["time.perf_counter"]), "`f`",
                          launcher=True)
        assert sharing.deferred() == "autotuning `k`"
    finally:
        sharing.clear()
    rules.enforce(Facts(launches=["k"]), "`f`", launcher=True)   # no such fact: the call is judged as usual
    assert sharing.deferred() is None


def test_a_check_that_times_is_deferred_only_on_a_shared_gpu():
    alone = isolate.check_sources([SQUARE], TIME_IT + "assert square(3) == 9\n", "times")
    assert alone.passed, alone.message
    ahead = isolate.check_sources([SQUARE], TIME_IT, "times", shared_gpu=True)
    assert not ahead.passed and ahead.reason == sharing.DEFERRED and "timing" in ahead.message
    # A test cell (or a chapter's check) that catches the exception still gives no verdict.
    first, second = TIME_IT.splitlines()
    caught = isolate.check_sources([SQUARE], f"{first}\ntry:\n    {second}\nexcept BaseException:\n    pass\n",
                                   "caught", shared_gpu=True)
    assert caught.reason == sharing.DEFERRED, caught.message
    # What does not time is judged as usual, pass or fail.
    assert isolate.check_sources([SQUARE], "assert square(3) == 9\n", "ok", shared_gpu=True).passed
    wrong = isolate.check_sources([SQUARE], "assert square(3) == 10, 'square(3)'\n", "wrong", shared_gpu=True)
    assert not wrong.passed and wrong.reason != sharing.DEFERRED


@pytest.mark.slow
def test_an_autotuner_in_the_worker_defers_the_check_even_when_the_launcher_swallows_it():
    ahead = isolate.check_sources([("setup", AUTOTUNED)], CALL_IT, "autotuned", shared_gpu=True)
    assert ahead.reason == sharing.DEFERRED and "autotuning `double_kernel`" in ahead.message, ahead.message
    # Alone, the same call autotunes (on a CPU, Triton's interpreter cannot time, and the launcher swallows
    # that error: the check says so), and is never deferred.
    alone = isolate.check_sources([("setup", AUTOTUNED)], CALL_IT + "assert torch.equal(out, 2 * x)\n", "autotuned")
    assert alone.reason != sharing.DEFERRED, alone.message


@pytest.mark.slow
def test_a_correctness_check_of_an_autotuned_kernel_is_not_deferred():
    """Correctness trials run one configuration each, untimed (grader.cuda.autotune): chapter 5's visible
    check gives its verdict on a shared GPU."""
    from conftest import ROOT
    from grader.learner import cells as nbcells

    ch05 = ROOT / "solutions" / "05_triton_matmul" / "05_triton_matmul.ipynb"
    cells = nbcells.learner_cells(ch05, "matmul-visible")
    verdict = isolate.check_sources(cells, nbcells.test_source(ch05, "matmul-visible"), "matmul-visible",
                                    shared_gpu=True)
    assert verdict.passed, verdict.message
