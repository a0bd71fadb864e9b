"""The correctness harness on the CPU: the same code paths a GPU check takes, with torch launchers."""

import pytest
import torch

from grader.harness import correctness
from grader.chapters import ch01
from grader.errors import CheckFailed, NotImplementedYet
from grader.harness.exercise import check_correctness

from conftest import torch_kernel


@torch_kernel


def add_ok(a, b, out):
    torch.add(a, b, out=out)


def test_correct_launcher_passes_on_every_size(capsys):
    result = check_correctness(ch01.VECTOR_ADD, add_ok, sizes=[1, 31, 1000, 4097], device="cpu")
    assert result.trials == 8
    assert "✓ 1a vector add: correct on 8 trials" in capsys.readouterr().out


def test_unwritten_tail_is_caught_by_poisoning():
    @torch_kernel
    def misses_tail(a, b, out):
        out[:-1] = a[:-1] + b[:-1]

    with pytest.raises(CheckFailed) as info:
        check_correctness(ch01.VECTOR_ADD, misses_tail, sizes=[31], device="cpu")
    msg = str(info.value)
    assert "1 of 31 elements are wrong" in msg
    assert "First wrong element at index 30" in msg and "got nan" in msg
    assert "never written" in msg


def test_stale_output_that_already_holds_the_answer_is_caught():
    # A launcher that writes nothing must fail even if `out` happened to hold the right values.
    with pytest.raises(CheckFailed, match="never written"):
        check_correctness(ch01.VECTOR_ADD, torch_kernel(lambda a, b, out: None), sizes=[100], device="cpu")


def test_wrong_values_report_first_index_expected_actual_and_errors():
    @torch_kernel
    def off_by_one(a, b, out):
        out.copy_(a + b)
        out[5] += 1.0

    with pytest.raises(CheckFailed) as info:
        check_correctness(ch01.VECTOR_ADD, off_by_one, sizes=[64], device="cpu")
    msg = str(info.value)
    assert "1 of 64 elements are wrong" in msg
    assert "First wrong element at index 5: expected" in msg
    assert "Largest absolute error 1" in msg
    assert "Mismatched elements: 1 / 64" in msg  # torch.testing.assert_close's own report is kept


def test_tail_hint_when_launch_does_not_cover_everything():
    @torch_kernel
    def short_grid(a, b, out):
        out[:256] = a[:256] + b[:256]

    with pytest.raises(CheckFailed, match=r"Every element from index 256 to the end is wrong: does your launch cover"):
        check_correctness(ch01.VECTOR_ADD, short_grid, sizes=[1000], device="cpu")


def test_changing_an_input_fails():
    @torch_kernel
    def clobbers(a, b, out):
        torch.add(a, b, out=out)
        a.zero_()

    with pytest.raises(CheckFailed, match="changed its input `a`"):
        check_correctness(ch01.VECTOR_ADD, clobbers, sizes=[10], device="cpu")


def test_fp16_result_in_fp32_output_fails_tolerance():
    @torch_kernel
    def half_precision(a, b, out):
        out.copy_((a.half() + b.half()).float())

    with pytest.raises(CheckFailed, match="wrong result"):
        check_correctness(ch01.VECTOR_ADD, half_precision, sizes=[4096], device="cpu")


def test_inputs_are_fresh_every_trial():
    seen = []

    @torch_kernel

    def records(a, b, out):
        seen.append(a.clone())
        torch.add(a, b, out=out)

    check_correctness(ch01.VECTOR_ADD, records, sizes=[16], trials=3, device="cpu")
    assert len(seen) == 3
    assert not torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])
    assert all(bool((s != 0).all()) for s in seen), "inputs must never be zeros"


def test_stub_launcher_says_where_to_write():
    @torch_kernel
    def stub(a, b, out):
        raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="exercise 1a .* is not written yet: write `vector_add\\(a, b, out\\)`"):
        check_correctness(ch01.VECTOR_ADD, stub, device="cpu")


def test_learner_exception_is_reported_with_their_frame():
    @torch_kernel
    def broken(a, b, out):
        return a.nonexistent

    with pytest.raises(CheckFailed) as info:
        check_correctness(ch01.VECTOR_ADD, broken, sizes=[4], device="cpu")
    msg = str(info.value)
    assert "vector_add(a, b, out) raised AttributeError" in msg and "in your code" in msg
    assert "grader/harness/exercise.py" not in msg


def test_fused_exercise_reference_and_tolerance():
    check_correctness(ch01.FUSED, torch_kernel(lambda a, x, b, out: out.copy_(torch.relu(a * x + b))), sizes=[1, 1000], device="cpu")

    @torch_kernel

    def no_relu(a, x, b, out):
        out.copy_(a * x + b)

    with pytest.raises(CheckFailed, match="elements are wrong"):
        check_correctness(ch01.FUSED, no_relu, sizes=[1000], device="cpu")


def test_tolerance_table_covers_course_dtypes():
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        rtol, atol = correctness.tolerance(dtype)
        assert 0 < rtol < 0.05 and 0 < atol < 0.05
    with pytest.raises(KeyError):
        correctness.tolerance(torch.int8)


def test_poison_fills_nan_and_int_sentinel():
    assert torch.isnan(correctness.poison(torch.zeros(4))).all()
    assert (correctness.poison(torch.zeros(4, dtype=torch.int32)) == torch.iinfo(torch.int32).min).all()


def test_shape_mismatch_message():
    with pytest.raises(CheckFailed, match=r"output has shape \(3,\), expected \(4,\)"):
        correctness.compare(torch.zeros(3), torch.zeros(4, dtype=torch.float64), rtol=0, atol=0, what="x")


def test_torch_error_widens_only_its_own_elements_and_never_forgives_nan():
    expected = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    torch_error = torch.tensor([0.5, 0.0, 0.0, 0.5], dtype=torch.float64)
    correctness.compare(torch.tensor([1.4, 2.0, 3.0, 4.0]), expected, rtol=0, atol=1e-6, what="x",
                        torch_error=torch_error)
    with pytest.raises(CheckFailed, match=r"index 1: expected 2, got 2.4") as exc:
        correctness.compare(torch.tensor([1.0, 2.4, 3.0, 4.0]), expected, rtol=0, atol=1e-6, what="x",
                            torch_error=torch_error)
    assert "1 of 4 elements" in str(exc.value) and "plus torch's own error" in str(exc.value)
    with pytest.raises(CheckFailed, match=r"NaN"):
        correctness.compare(torch.tensor([1.0, 2.0, 3.0, float("nan")]), expected, rtol=0, atol=1e-6, what="x",
                            torch_error=torch_error)
