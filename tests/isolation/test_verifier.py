"""The verifier on its own (grader.isolation.verifier.run): one test cell against a worker holding the
learner's cells, and the Verdict it returns for each way a check can end. End-to-end tests (the exploit
suite, `ladder check`) reach it only through a notebook; here each outcome is pinned to its reason."""

import base64
import pickle

import pytest

from grader.isolation import verifier
from grader.calls.messages import Job

LEARNER = [("setup", "import torch"), ("solution", "x = 2\nsession = 'the learner\\'s own object'\n")]


def _verdict(test: str, cells=LEARNER):
    return verifier.run(Job(list(cells), test, "t-cell"))


def test_a_passing_check_passes_and_hands_back_only_the_graders_values():
    verdict = _verdict("assert x == 2\nresult_t = None\ny = x + 1\n")
    assert (verdict.passed, verdict.reason) == (True, None), verdict
    # result_t (None: what a check returns without a GPU) goes back to the notebook; y, made by the test
    # from the learner's value, is not the grader's and stays here.
    assert pickle.loads(base64.b64decode(verdict.values)) == {"result_t": None}


def test_session_is_the_graders_not_the_learners():
    verdict = _verdict("assert session.has_gpu in (True, False)")
    assert verdict.passed, verdict.message


def test_a_name_the_learner_never_defined_is_not_written():
    verdict = _verdict("softmax(1)")
    assert (verdict.passed, verdict.reason) == (False, "not-written")
    assert "does not define `softmax`" in verdict.message


@pytest.mark.parametrize("test, reason, cls, says", [
    ("assert x == 3", "failed", "AssertionError", "released stub"),   # a bare assert: the message says something
    ("from grader.errors import CheckFailed\nraise CheckFailed('wrong values', reason='wrong-result')",
     "wrong-result", "CheckFailed", "wrong values"),
    ("raise NotImplementedError()", "not-written", "NotImplementedYet", "replace `raise NotImplementedError()`"),
    ("1 / 0", "failed", "ZeroDivisionError", "this is a grader bug"),
])
def test_each_way_a_check_ends_has_its_reason_and_a_message(test, reason, cls, says):
    verdict = _verdict(test)
    assert (verdict.passed, verdict.reason, verdict.cls) == (False, reason, cls), verdict
    assert says in verdict.message, verdict.message


def test_a_name_left_undefined_by_a_cell_that_raised_is_named_with_the_cells_problem():
    cells = [("setup", "import torch"), ("solution", "raise ValueError('typo in my cell')\n")]
    verdict = _verdict("softmax(1)", cells)
    assert (verdict.passed, verdict.reason) == (False, "not-written")
    assert "does not define `softmax`" in verdict.message and "typo in my cell" in verdict.message, verdict.message
