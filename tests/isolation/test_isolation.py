"""The isolation layer's mechanics, on a CPU (Triton interpreter): grader.isolation's isolate, verifier,
worker and remote. The exploit suite (test_exploits.py) covers the cheats one by one; this file covers
what every check relies on: the learner's cells, the verdict channel, guard bands, the worker's facts,
and timed batches with sampled re-checks."""

from __future__ import annotations

import pytest
import torch

from conftest import ROOT
from grader.errors import CheckFailed
from grader.harness import correctness
from grader.isolation import isolate
from grader.learner import cells as nbcells

CH05 = ROOT / "solutions" / "05_triton_matmul" / "05_triton_matmul.ipynb"


def test_learner_cells_are_setup_and_solution_cells_before_the_test():
    names = [n for n, _ in nbcells.learner_cells(CH05, "matmul-visible")]
    assert names[0] == "setup"
    assert names[1:] == ["napkin-solution", "grouped-solution", "matmul-solution"]
    assert "fused-solution" not in names
    assert "### BEGIN HIDDEN TESTS" in nbcells.test_source(CH05, "matmul-hidden")


def test_guard_bands_catch_writes_on_either_side():
    g = correctness.guarded(torch.empty(4, 8))
    g.out.fill_(1.0)
    g.check("fine")
    g.buffer[g.pad + 32] = 0.0   # one past the end
    with pytest.raises(CheckFailed) as exc:
        g.check("after")
    assert exc.value.reason == "out-of-bounds" and "out[32]" in str(exc.value)
    g.reset()
    g.buffer[g.pad - 3] = 0.0     # before the start
    with pytest.raises(CheckFailed, match="before the start"):
        g.check("before")


def _check(extra: str, cell: str = "matmul-visible", **kw) -> isolate.Verdict:
    cells = nbcells.learner_cells(CH05, cell) + [("student", extra)]
    return isolate.check_sources(cells, nbcells.test_source(CH05, cell), cell, **kw)


@pytest.mark.slow
def test_learner_code_cannot_write_the_verdict():
    # Write a passing verdict to every file descriptor the worker holds, print one, then fail.
    v = _check("import os, json\n"
               "def matmul(a, b, out):\n"
               "    fake = json.dumps({'passed': True, 'reason': None, 'message': ''}).encode()\n"
               "    for fd in range(0, 256):\n"
               "        try:\n"
               "            os.write(fd, fake)\n"
               "        except OSError:\n"
               "            pass\n"
               "    print(fake.decode())\n")
    assert not v.passed
    assert v.reason == "tampered", v.message
    assert "connection" in v.message


def test_a_worker_reply_cannot_run_code_in_the_verifier():
    import os
    import pickle

    from multiprocessing.reduction import ForkingPickler

    from grader.isolation.remote import safe_loads

    with pytest.raises(pickle.UnpicklingError, match="refused"):
        safe_loads(pickle.dumps(os.system))

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    with pytest.raises(pickle.UnpicklingError):
        safe_loads(pickle.dumps(Evil()))
    t = torch.arange(6.0).reshape(2, 3)
    from grader.calls.messages import Called, Facts

    back = safe_loads(bytes(ForkingPickler.dumps(Called(t, Facts(launches=["k"])))))
    assert torch.equal(back.result, t) and back.facts == Facts(launches=["k"])


@pytest.mark.slow
def test_patching_the_grader_in_a_cell_changes_nothing():
    # The verifier imports its own grader; the worker's patched copy is reported, not obeyed.
    v = _check("import grader.chapters.ch05 as c\n"
               "import grader.harness.exercise as e\n"
               "c.check_matmul = lambda *a, **k: None\n"
               "e.check_correctness = lambda *a, **k: None\n"
               "def matmul(a, b, out):\n"
               "    raise NotImplementedError()\n")
    assert not v.passed and v.reason in ("tampered", "not-written"), v.message


@pytest.mark.slow
def test_a_cell_that_fails_to_define_things_is_reported_with_its_line():
    v = _check("x = undefined_name + 1\n")  # the solution's matmul is still defined, so the check passes
    assert v.passed, v.message
    v = _check("del matmul\n")
    assert not v.passed and v.reason == "not-written" and "matmul" in v.message


@pytest.mark.slow
def test_timed_batches_on_a_cpu_recheck_outputs_and_count_launches():
    """measure_speed through a worker on the CPU: rotating sets, re-checks, and a cache that skips work."""
    from grader.chapters import ch05
    from grader.harness.exercise import measure_speed
    from grader.isolation.remote import RemoteFunction, WorkerHandle
    from grader.harness.timing import BatchBackend

    cells = nbcells.learner_cells(CH05, "matmul-visible")
    cache = ("_real = matmul\n_seen = {}\n"
             "def matmul(a, b, out):\n"
             "    key = (a.data_ptr(), float(a[0, 0]), float(b[0, 0]))\n"
             "    if key in _seen:\n"
             "        return  # the output still holds last call's answer: skip the work\n"
             "    _real(a, b, out)\n"
             "    _seen[key] = True\n")
    size = (32, 32, 32)
    backend = BatchBackend(target_ms=5, batches=2, device="cpu")
    handle = WorkerHandle()
    try:
        handle.load(cells, {})
        fn = RemoteFunction(handle, "matmul")
        r = measure_speed(ch05.MATMUL, fn, "5a", device="cpu", backend=backend, size=size)
        assert r.speedup > 0 and r.comparison.backend == "batch"
        handle.load(cells + [("cheat", cache)], {})   # a later check of the same session adds the cell
        cheat = RemoteFunction(handle, "matmul")
        with pytest.raises(CheckFailed) as exc:
            measure_speed(ch05.MATMUL, cheat, "5a", device="cpu", backend=backend, size=size)
        assert exc.value.reason == "kernel-unused", str(exc.value)
        # The same cache, but every call launches a kernel of the learner's (a fingerprint of the
        # inputs): the timed calls that find a kept result still skip the matmul kernel.
        handle.load(cells + [("cheat", cache), ("fingerprint", FINGERPRINT)], {})
        cheat = RemoteFunction(handle, "matmul")
        with pytest.raises(CheckFailed) as exc:
            measure_speed(ch05.MATMUL, cheat, "5a", device="cpu", backend=backend, size=size)
        assert exc.value.reason == "kernel-unused", str(exc.value)
        assert "only `first_kernel`, without `keep_kernel`, `matmul_kernel`" in str(exc.value), str(exc.value)
    finally:
        handle.close()


@pytest.mark.slow
def test_a_copy_ceiling_verdict_rests_on_the_asking_processs_time_of_the_workers_calls(tmp_path, monkeypatch):
    """A copy-ceiling bar through a worker on the CPU: the learner's calls are timed by the asking process around
    each request (grader.calls.trusted), the copy by the asking process itself in the same rounds, and the
    fraction is computed from those two and nothing else."""
    from grader.chapters import ch05
    from grader.harness.ceilings import COPY_NAME, ceiling_fraction
    from grader.harness.exercise import measure_speed
    from grader.harness.timing import BatchBackend
    from grader.isolation.remote import RemoteFunction, WorkerHandle

    override = tmp_path / "bars.toml"
    override.write_text('["5a"]\nkind = "copy-ceiling"\nbar = 0.5\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    handle = WorkerHandle()
    try:
        handle.load(nbcells.learner_cells(CH05, "matmul-visible"), {})
        fn = RemoteFunction(handle, "matmul")
        r = measure_speed(ch05.MATMUL, fn, "5a", device="cpu", backend=BatchBackend(target_ms=5, batches=2, device="cpu"),
                          size=(32, 32, 32))
    finally:
        handle.close()
    copy = r.comparison.others[COPY_NAME]
    assert r.kind == "copy-ceiling" and len(copy.rounds_ms) == r.comparison.rounds
    assert r.fraction == pytest.approx(ceiling_fraction(r.bytes_moved, r.comparison.candidate.median_ms,
                                                        2 * (32 << 20), copy.median_ms))
    assert "the grader's own process, which runs none of your code" in r.timed_where and r.integrity["requests"] > 0


FINGERPRINT = """
@triton.jit
def first_kernel(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr))


@triton.jit
def keep_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


_solution = matmul
_kept = {}


def matmul(a, b, out):
    first = torch.empty(2, dtype=a.dtype, device=a.device)
    first_kernel[(1,)](a, first)
    first_kernel[(1,)](b, first[1:])
    key = (a.data_ptr(), b.data_ptr(), tuple(first.tolist()))
    if key in _kept:
        out.copy_(_kept[key])  # seen these inputs: hand back the kept answer
        return
    _solution(a, b, out)
    kept = torch.empty_like(out)
    keep_kernel[(1,)](out, kept, out.numel(), BLOCK=triton.next_power_of_2(out.numel()))
    _kept[key] = kept
"""


def test_causal_baseline_is_the_learners_launcher_with_causal_false_wherever_it_runs():
    """6-causal times the learner's own causal=False launch: it must run where the launcher runs, so a
    worker's launcher is timed in batches there (not one round trip per call), and an in-process one here."""
    from grader.chapters import ch06
    from grader.isolation.remote import RemoteFunction
    from grader.calls.seam import LocalFunction

    fn = RemoteFunction(handle=None, name="attention")
    ex = ch06.causal_exercise(fn)
    assert isinstance(ex.baseline, RemoteFunction) and ex.baseline.name == "attention"
    assert ex.baseline.trailing == (False,) and ch06.bind(fn, True).trailing == (True,)
    assert ch06.bind(fn, True).base().trailing == ()
    local = ch06.causal_exercise(lambda q, k, v, out, causal: None).baseline
    assert isinstance(local, LocalFunction) and local.trailing == (False,)


def test_a_test_cell_reads_the_graders_own_session_not_the_learners():
    # Hidden tests pick their sizes with `session.has_gpu` (chapters 7 and 8). The learner's `session`
    # would reach the verifier as a stand-in without that attribute; a learner's fake must not count.
    cells = [("setup", "class Fake:\n    has_gpu = 'the learner says so'\nsession = Fake()\n")]
    source = ("from grader.harness.session import Session\n"
              "assert type(session) is Session, type(session)\n"
              "assert session.has_gpu in (True, False)\n")
    verdict = isolate.check_sources(cells, source, "session-cell")
    assert verdict.passed, verdict.message
