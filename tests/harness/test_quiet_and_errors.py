"""stderr stays clean on success; errors name the problem."""

import os
import sys
import warnings

import pytest

from grader.errors import CheckFailed, KernelLaunchError
from grader.cuda.kernels import as_kernel_arg as _as_kernel_arg, dims as _dims
from grader.harness.quiet import captured_stderr


def test_captures_warnings_python_stderr_and_fd2(capfd):
    with captured_stderr() as err:
        warnings.warn("a library warning")
        print("python-level", file=sys.stderr)
        os.write(2, b"c-level\n")
    captured = capfd.readouterr()
    assert captured.err == ""
    assert "a library warning" in err.summary()
    assert "python-level" in err.text and "c-level" in err.text


def test_fd2_is_restored_afterwards(capfd):
    with captured_stderr():
        pass
    os.write(2, b"after\n")
    assert "after" in capfd.readouterr().err


def test_check_failed_is_an_assertion_error():
    assert issubclass(CheckFailed, AssertionError)


@pytest.mark.parametrize("arg, message", [
    (5, "numpy.int64"), (2.5, "numpy.float32"), (True, "Python bools"),
])
def test_plain_python_scalars_are_refused_with_the_fix(arg, message):
    with pytest.raises(KernelLaunchError, match=message):
        _as_kernel_arg(arg)


def test_cpu_tensor_argument_is_refused():
    import torch
    with pytest.raises(KernelLaunchError, match="CPU tensor"):
        _as_kernel_arg(torch.zeros(3))


@pytest.mark.parametrize("dims", [(0,), (1, 2, 3, 4), (2.0,), "x"])
def test_bad_launch_dimensions(dims):
    with pytest.raises(KernelLaunchError):
        _dims(dims, "grid")


def test_good_launch_dimensions():
    assert _dims(4, "grid") == (4,) and _dims((4, 2), "block") == (4, 2)
