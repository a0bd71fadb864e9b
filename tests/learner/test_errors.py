"""One translation of what went wrong in a learner's code (grader.learner.errors.translate), by kind:
the stub in each form it takes, Triton's compile and interpreter errors (stood in for by classes of the
same names, which is how the module recognises them), and anything else with the learner's own lines
of the traceback and none of the grader's."""

import pytest

from grader.errors import CheckFailed, KernelCompileError, NotImplementedYet
from grader.learner import errors


class CompilationError(Exception):
    """Named as Triton's: translate recognises Triton's errors by class name, not by import."""


class InterpreterError(Exception):
    pass


def _raised_in_a_cell(source: str, name: str = "launcher"):
    """The exception a learner's cell function raises, its frames under the cell's own file name."""
    ns = {"InterpreterError": InterpreterError}
    exec(compile(source, "<ipython-input-7>", "exec"), ns)
    try:
        ns[name]()
    except Exception as exc:  # noqa: BLE001 - the exception is what is under test
        return exc
    raise AssertionError("the cell did not raise")


def test_a_ladder_error_is_passed_on_as_it_is():
    exc = CheckFailed("wrong values", reason="wrong-result")
    assert errors.translate(exc) is exc


@pytest.mark.parametrize("exc", [
    NotImplementedError(),
    CompilationError("at 3:4: unsupported AST node type: Raise (NotImplementedError)"),
])
def test_the_stub_is_not_written_yet_in_each_form(exc):
    found = errors.translate(exc)
    assert isinstance(found, NotImplementedYet) and "still the released stub" in str(found)


def test_a_stub_under_the_interpreter_is_found_through_the_cause():
    try:
        try:
            raise NotImplementedError()
        except NotImplementedError as inner:
            raise InterpreterError("kernel failed") from inner
    except InterpreterError as exc:
        assert isinstance(errors.translate(exc), NotImplementedYet)


def test_a_compile_error_keeps_tritons_message():
    found = errors.translate(CompilationError("at 5:8: name 'offs' is not defined"), "exercise 5a")
    assert isinstance(found, KernelCompileError)
    assert str(found).startswith("exercise 5a: your Triton kernel did not compile.") and "'offs'" in str(found)


def test_an_interpreter_error_names_its_cause_and_the_learners_line():
    exc = _raised_in_a_cell("def launcher():\n    try:\n        [][3]\n    except IndexError as e:\n"
                            "        raise InterpreterError('wrapped') from e\n")
    found = errors.translate(exc, "your kernel")
    assert isinstance(found, CheckFailed) and found.reason == "raised"
    assert "failed in the interpreter with IndexError: list index out of range" in str(found)
    assert "<ipython-input-7>" in str(found)


def test_any_other_error_shows_the_learners_frames_not_the_graders():
    exc = _raised_in_a_cell("def launcher():\n    return {}['BLOCK']\n")
    found = errors.translate(exc, "vector_add(a, b, out)")
    assert isinstance(found, CheckFailed) and found.reason == "raised"
    assert str(found).startswith("vector_add(a, b, out) raised KeyError: 'BLOCK'")
    assert "<ipython-input-7>" in str(found) and "test_errors.py" in str(found)   # this test is the caller here
    assert errors._GRADER not in str(found)


def test_causes_stop_at_a_cycle():
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert list(errors.causes(a)) == [a, b]
