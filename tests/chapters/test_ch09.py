"""Chapter 9 (low precision): the napkin math and its key, the quantize reference on every edge it states, the
exact comparison and what its messages say, the several outputs of 9a through the harness, the GEMM's tolerance
against what it must reject, the FP8 tensor-core verdict, the solution and its students under Triton's
interpreter, the solution's kernels compiled for sm_89 and sm_90, the notebook through `ladder check`, and the
kernels on a GPU."""

import math

import pytest
import torch

from conftest import CHECK_OUTCOME, HAS_GPU, ROOT, ladder_check_one, run_script
from grader.chapters import ch09
from grader.cuda import archs
from grader.cuda.tally import Tally
from grader.errors import CheckFailed, NotGradable, NotImplementedYet
from grader.harness import correctness
from grader.harness.exercise import verify

SOLUTION = ROOT / "solutions/09_low_precision/09_low_precision.ipynb"
FP8 = torch.float8_e4m3fn


def stub(*args):
    raise NotImplementedError()


# ------------------------------------------------------------------------------------- 9.0

def _step(x, fmt):
    return ch09.step_reference(x, fmt)


def test_napkin_accepts_the_key(capsys):
    ch09.check_napkin_math(_step, ch09.flushed_below_reference, ch09.gemm_bytes_reference)
    assert "✓ 9.0" in capsys.readouterr().out


def test_the_step_key_is_the_formats_own_spacing():
    for fmt, dtype in (("e4m3", FP8), ("e5m2", torch.float8_e5m2)):
        values = torch.arange(1, 127, dtype=torch.uint8).view(dtype).float()
        values = values[torch.isfinite(values)]
        for lo, hi in zip(values[:-1].tolist(), values[1:].tolist()):
            assert ch09.step_reference(lo, fmt) == hi - lo, (fmt, lo)


@pytest.mark.parametrize("answers, message", [
    ((lambda x, f: _step(x, f) / 2, ch09.flushed_below_reference, ch09.gemm_bytes_reference), r"fp8_step\(1.0, 'e4m3'\)"),
    ((lambda x, f: 2.0 ** (math.frexp(abs(x))[1] - 1 - {"e4m3": 3, "e5m2": 2}[f]), ch09.flushed_below_reference,
      ch09.gemm_bytes_reference), r"fp8_step\(0.01, 'e4m3'\).*subnormals"),
    ((_step, lambda a: 2.0 ** -9 * a / 448, ch09.gemm_bytes_reference), "at most half of it"),
    ((_step, ch09.flushed_below_reference, lambda m, n, k: m * k + n * k + 2 * m * n), "4 bytes a scale"),
])
def test_napkin_rejects_wrong_answers_with_a_hint(answers, message):
    with pytest.raises(CheckFailed, match=message):
        ch09.check_napkin_math(*answers)


def test_napkin_stub_is_not_written_yet():
    with pytest.raises(NotImplementedYet, match="exercise 9.0 is not written yet"):
        ch09.check_napkin_math(stub, stub, stub)


def test_flushed_below_is_where_the_reference_gives_zero():
    amax = 1000.0
    edge = ch09.flushed_below_reference(amax)
    x = torch.tensor([amax, edge, edge * (1 + 2**-20), -edge])
    codes = (x / (amax / 448)).clamp(-448, 448).to(FP8).float()
    assert codes[1] == 0 and codes[2] != 0 and codes[3] == 0


# ------------------------------------------------------------------------------------- 9a reference

def test_reference_rounds_ties_to_even_and_its_scale_is_exact():
    x = torch.tensor([[448.0, 16.0, 8.5, 9.5, -12.5, 0.5 * 2**-9]], dtype=torch.float32)
    # scale = 448 / 448 = 1. Between 8 and 16 the step is 1: 8.5 lies halfway between 8 (mantissa 000, even) and 9
    # (001): 8; 9.5 between 9 and 10 (010): 10; -12.5 between 12 (100) and 13: -12; 2^-10, half the smallest
    # subnormal, between 0 and 2^-9: 0
    codes, scales, _ = ch09.quantize_reference(x)
    assert scales.tolist() == [[1.0]]
    assert codes.float().tolist() == [[448.0, 16.0, 8.0, 10.0, -12.0, 0.0]]


def test_reference_edge_groups():
    x = torch.zeros(3, 300)
    x[1, :] = torch.linspace(-3, 5, 300)
    x[1, 5] = float("nan")
    x[2, 200] = float("-inf")
    x[2, 3] = 7.0
    codes, scales, _ = ch09.quantize_reference(x)
    assert scales.shape == (3, 3) and scales.is_contiguous()
    floor = torch.tensor(1e-4, dtype=torch.float32) / 448
    assert scales[0, 0] == floor and (codes[0].float() == 0).all()       # a group of zeros: the floor's scale
    assert torch.isnan(scales[0, 1]) and torch.isfinite(scales[1:, 1]).all()   # NaN: that group only
    assert torch.isinf(scales[1, 2]) and scales[0, 2] == torch.tensor(7.0) / 448
    # the last group of a row holds 300 - 256 = 44 columns: its amax is theirs
    assert scales[2, 1] == torch.tensor(5.0, dtype=torch.float32) / 448


def test_reference_is_eager_and_does_not_depend_on_torchs_overflow_rule():
    x = torch.randn(4, 256) * 100
    codes, scales = ch09.eager_quantize(x)
    again, _, scaled = ch09.quantize_reference(x)
    assert torch.equal(codes.view(torch.uint8), again.view(torch.uint8))
    assert scaled.abs().max() <= 448 * (1 + 2**-20)   # amax / scale: at 448, within an fp32 rounding


def test_inputs_hold_the_edge_groups_at_checked_sizes_only():
    gen = torch.Generator().manual_seed(1)
    (x,) = ch09._quantize_inputs((3, 300), gen, "cpu")
    _, scales, scaled = ch09.quantize_reference(x)
    assert x.dtype == torch.bfloat16
    assert torch.isnan(scales).sum() == 1 and torch.isinf(scales).sum() == 1
    assert (scales == torch.tensor(1e-4, dtype=torch.float32) / 448).sum() == 1
    values = torch.arange(1, 126, dtype=torch.uint8).view(FP8).float()
    midpoints = set(((values[:-1] + values[1:]) / 2).tolist())
    assert sum(abs(v) in midpoints for v in scaled[torch.isfinite(scaled)].tolist()) >= 10   # the group of ties
    (big,) = ch09._quantize_inputs((1, ch09.EDGE_LIMIT + 128), gen, "cpu")
    assert torch.isfinite(big.float()).all()


def test_the_ties_group_divides_to_exact_midpoints():
    gen = torch.Generator().manual_seed(2)
    group = ch09._ties_group(128, gen, "cpu").to(torch.bfloat16)
    _, scales, scaled = ch09.quantize_reference(group[None, :])
    assert math.log2(float(scales[0, 0])) == int(math.log2(float(scales[0, 0])))   # a power of two
    values = torch.arange(1, 126, dtype=torch.uint8).view(FP8).float()
    mids = ((values[:-1] + values[1:]) / 2).tolist()
    ties = [v for v in scaled[0].abs().tolist() if v != 448.0]
    assert ties and all(v in mids for v in ties)


# ------------------------------------------------------------------------------------- 9a comparison

def _quantized(x):
    codes, scales, scaled = ch09.quantize_reference(x)
    out = ch09.QUANT_OUTPUTS.allocate(tuple(x.shape), "cpu")
    correctness.poison(out)
    got_codes, got_scales = ch09.QUANT_OUTPUTS.views(out, tuple(x.shape))
    got_codes.copy_(codes)
    got_scales.copy_(scales)
    return out, (codes, scales, scaled)


def _compare(out, expected, size):
    ch09.QUANT_OUTPUTS.compare(ch09.QUANT_OUTPUTS.views(out, size), expected, size, "9a")


def test_the_reference_written_into_the_views_passes_and_the_views_share_the_buffer():
    gen = torch.Generator().manual_seed(3)
    (x,) = ch09._quantize_inputs((5, 1000), gen, "cpu")
    out, expected = _quantized(x)
    _compare(out, expected, (5, 1000))
    codes, scales = ch09.QUANT_OUTPUTS.views(out, (5, 1000))
    assert codes.untyped_storage().data_ptr() == scales.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
    assert (scales.data_ptr() - out.data_ptr()) % 256 == 0 and scales.shape == (8, 5) and codes.dtype == FP8
    # Every element written. (A group holding NaN may write a NaN code, 0xFF, the poison's byte: inputs of that
    # kind are only drawn at the correctness sizes, never for timed batches, whose check this is.)
    out, _ = _quantized(torch.randn(5, 1000).bfloat16())
    assert ch09.QUANT_OUTPUTS.unwritten(out, (5, 1000)) == 0


def test_unwritten_is_judged_part_by_part():
    out = ch09.QUANT_OUTPUTS.allocate((2, 130), "cpu")
    correctness.poison(out)
    assert ch09.QUANT_OUTPUTS.unwritten(out, (2, 130)) == 2 * 130 + 2 * 2
    codes, scales = ch09.QUANT_OUTPUTS.views(out, (2, 130))
    scales.fill_(float.fromhex("0x1.fffffep-1"))   # bytes ff ff 7f 3f: written, with bytes of all ones in it
    codes[0].zero_()
    assert ch09.QUANT_OUTPUTS.unwritten(out, (2, 130)) == 130


@pytest.mark.parametrize("spoil, message", [
    (lambda c, s: s.view(torch.int32).__iadd__(1), r"scales differ.*tl\.div_rn"),
    (lambda c, s: c.view(torch.uint8).__setitem__((0, 0), 0xFF), "never written"),
])
def test_a_wrong_scale_or_code_is_named_with_its_cause(spoil, message):
    x = torch.randn(2, 256) * 3
    out, expected = _quantized(x)
    codes, scales = ch09.QUANT_OUTPUTS.views(out, (2, 256))
    spoil(codes, scales)
    with pytest.raises(CheckFailed, match=message) as exc:
        _compare(out, expected, (2, 256))
    assert exc.value.reason == "wrong-result"


def test_a_tie_rounded_away_from_zero_is_named():
    x = torch.tensor([[448.0, 8.5]])
    out, expected = _quantized(x)
    codes, _ = ch09.QUANT_OUTPUTS.views(out, (1, 2))
    codes[0, 1] = torch.tensor(9.0).to(FP8)
    with pytest.raises(CheckFailed, match="exact tie between two e4m3 values: round half to even"):
        _compare(out, expected, (1, 2))


def test_a_nan_group_with_a_finite_scale_is_refused_and_its_codes_are_not_compared():
    x = torch.randn(1, 256)
    x[0, 3] = float("nan")
    out, expected = _quantized(x)
    codes, scales = ch09.QUANT_OUTPUTS.views(out, (1, 256))
    codes[0, :128] = 0   # any codes in the NaN group: not graded
    _compare(out, expected, (1, 256))
    scales[0, 0] = 1.0
    with pytest.raises(CheckFailed, match="must not be finite.*tl.max.*ignores NaN"):
        _compare(out, expected, (1, 256))


def test_a_zeros_sign_is_not_graded():
    x = torch.tensor([[448.0, -1e-6]])
    out, expected = _quantized(x)
    codes, _ = ch09.QUANT_OUTPUTS.views(out, (1, 2))
    assert codes.view(torch.uint8)[0, 1] == 0x80
    codes.view(torch.uint8)[0, 1] = 0x00
    _compare(out, expected, (1, 2))


def test_the_harness_poisons_and_verifies_the_packed_output():
    gen = torch.Generator().manual_seed(4)
    inputs = ch09.QUANTIZE.make_inputs((3, 300), gen, "cpu")
    out = correctness.poison(ch09.QUANTIZE.make_output((3, 300), "cpu"))
    assert (out == 0xFF).all()
    assert ch09.QUANTIZE.unwritten(out, (3, 300)) == ch09.QUANTIZE.output_numel((3, 300), out)
    with pytest.raises(CheckFailed, match="scales were never written"):
        verify(ch09.QUANTIZE, (3, 300), inputs, correctness.snapshot(inputs), out, "9a")
    codes, scales, _ = ch09.quantize_reference(inputs[0])
    views = ch09.QUANTIZE.split((*inputs, out))
    assert views[0] is inputs[0] and views[1].shape == (3, 300) and views[2].shape == (3, 3)
    views[1].copy_(codes)
    views[2].copy_(scales)
    verify(ch09.QUANTIZE, (3, 300), inputs, correctness.snapshot(inputs), out, "9a")


def test_inputs_holding_nan_count_as_unchanged():
    x = torch.tensor([1.0, float("nan")], dtype=torch.bfloat16)
    correctness.require_unchanged([x.clone()], [x], "9a", ("x",))
    y = x.clone()
    y[0] = 2
    with pytest.raises(CheckFailed, match="changed its input `x` \\(1 elements differ\\)"):
        correctness.require_unchanged([x], [y], "9a", ("x",))


# ------------------------------------------------------------------------------------- 9b tolerance

def _gemm_case(size=(40, 300, 400), seed=5):
    gen = torch.Generator().manual_seed(seed)
    inputs = ch09._gemm_inputs(size, gen, "cpu")
    return inputs, ch09.gemm_reference(*[t.double() for t in inputs])


def _gemm_verify(inputs, out, size=(40, 300, 400)):
    verify(ch09.GEMM, size, inputs, correctness.snapshot(inputs), out, "9b")


def test_the_product_rounded_to_bf16_passes_and_so_does_fp32_accumulation_per_block():
    inputs, want = _gemm_case()
    _gemm_verify(inputs, want.to(torch.bfloat16))
    a, a_scale, b, b_scale = inputs
    acc = torch.zeros(40, 300)
    for j in range(ch09.groups(400)):
        block = slice(128 * j, 128 * (j + 1))
        part = a[:, block].float() @ b[:, block].float().t()
        acc += part * a_scale[j][:, None] * b_scale[:, j].repeat_interleave(128)[:300][None, :]
    _gemm_verify(inputs, acc.to(torch.bfloat16))


@pytest.mark.parametrize("wrong", ["no scales", "one scale per tile", "wrong row scales", "K tail dropped",
                                   "a 128x128 block scale for A"])
def test_the_tolerance_rejects_what_it_says_it_rejects(wrong):
    inputs, _ = _gemm_case()
    a, a_scale, b, b_scale = [t.double() for t in inputs]
    if wrong == "no scales":
        out = a @ b.t()
    elif wrong == "one scale per tile":
        out = ch09.gemm_reference(a, a_scale[:1].expand_as(a_scale), b, b_scale[:, :1].expand_as(b_scale))
    elif wrong == "wrong row scales":
        out = ch09.gemm_reference(a, a_scale.roll(1, dims=1), b, b_scale)
    elif wrong == "K tail dropped":
        out = ch09.gemm_reference(a[:, :384], a_scale[:3], b[:, :384], b_scale[:, :3])
    else:
        out = ch09.gemm_reference(a, a_scale[:, ::128].repeat_interleave(128, dim=1)[:, :40], b, b_scale)
    with pytest.raises(CheckFailed, match="wrong result"):
        _gemm_verify(inputs, out.to(torch.bfloat16))


def test_the_bound_is_the_blocks_sum_of_absolute_products():
    inputs, _ = _gemm_case((2, 3, 130))
    a, a_scale, b, b_scale = [t.double() for t in inputs]
    bound = ch09.gemm_error_bound(a, a_scale, b, b_scale)
    ad, bd = ch09.dequantize(a, a_scale, b, b_scale)
    assert torch.allclose(bound[1, 2], 2.0 ** -9 * (ad[1].abs() * bd[2].abs()).sum())
    assert ch09._gemm_tolerance((1, 1, 1)) == (2.0 ** -8, 1e-30)


def test_the_baseline_takes_the_scales_in_the_layouts_cublas_wants():
    """torch._scaled_mm's own checks (its meta function): A's 1 x 128 scales outer-dim-major, B's blocks."""
    a = torch.empty(256, 512, device="meta", dtype=FP8)
    b = torch.empty(384, 512, device="meta", dtype=FP8)
    a_scale = torch.empty(4, 256, device="meta")
    b_scale = torch.empty(3, 4, device="meta")
    out = ch09.scaled_mm_baseline(a, a_scale, b, b_scale)
    assert out.shape == (256, 384) and out.dtype == torch.bfloat16
    assert a_scale.t().stride() == (1, 256) and b_scale.t().shape == (4, 3)


# ------------------------------------------------------------------------------------- 9b FP8 verdict

def test_fp8_work_passes_when_every_product_ran_on_fp8_operands():
    tally = Tally(macs={"k": 64 * 64 * 256}, fp8_macs={"k": 64 * 64 * 256})
    assert "on fp8 operands" in ch09.judge_fp8_work(tally, ["k"], (64, 64, 256), "9b")


def test_fp16_tensor_cores_are_refused_with_their_own_reason():
    tally = Tally(macs={"k": 64 * 64 * 256})
    with pytest.raises(CheckFailed, match="only 0 of them on fp8 operands.*before tl.dot") as exc:
        ch09.judge_fp8_work(tally, ["k"], (64, 64, 256), "9b")
    assert exc.value.reason == "no-fp8-tensor-cores"
    with pytest.raises(CheckFailed, match="the rest ran elsewhere") as exc:
        ch09.judge_fp8_work(Tally(macs={"k": 10}, fp8_macs={"k": 10}), ["k"], (64, 64, 256), "9b")
    assert exc.value.reason == "no-fp8-tensor-cores"


def test_an_uncounted_kernel_is_unchecked_not_passed(monkeypatch):
    monkeypatch.setenv("LADDER_UNCHECKED", "zero")
    with pytest.raises(CheckFailed) as exc:
        ch09.judge_fp8_work(Tally(uncounted={"k": "no ptxas"}), ["k"], (64, 64, 256), "9b")
    assert exc.value.reason == "unchecked"


# ------------------------------------------------------------------------------------- 9.2, 9.P, doctor

def test_the_curve_and_its_reading_in_the_interpreter():
    curve = ch09.accumulator_curve(ks=(512, 1024, 2048), verbose=False)
    assert "interpreter computes it" in curve["where"] and len(curve["plain"]) == 3
    assert all(e >= ch09.ERROR_FLOOR for e in curve["plain"] + curve["promoted"])
    slope, ratio = ch09.read_curve_reference([512, 1024, 2048], [1e-3, 2e-3, 4e-3], [1e-6, 1e-6, 2e-6])
    assert slope == pytest.approx(1.0) and ratio == pytest.approx(2000.0)


def test_the_curve_check_grades_the_reading_of_the_measurement(capsys):
    import numpy as np

    def read_curve(ks, plain, promoted):
        return float(np.polyfit(np.log2(ks), np.log2(plain), 1)[0]), plain[-1] / promoted[-1]

    ch09.check_curve_reading(read_curve)
    assert "✓ 9.2" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="at the largest K"):
        ch09.check_curve_reading(lambda ks, p, q: (read_curve(ks, p, q)[0], q[-1] / p[-1] + 1))
    with pytest.raises(NotImplementedYet, match="exercise 9.2"):
        ch09.check_curve_reading(stub)


@pytest.mark.parametrize("arch, says", [("sm_75", "interpreter"), ("sm_86", "interpreter"), ("sm_89", "sm_90 only"),
                                        ("sm_90", None)])
def test_doctor_notes(arch, says):
    notes = ch09.doctor_notes(archs.by_name(arch), {})
    assert (says in notes[0]) if says else notes == []


def test_a_speed_cell_that_cannot_run_here_is_settled_by_the_policy(monkeypatch, capsys):
    from grader.harness.feasibility import gradability, settle_unmeasured

    verdict = gradability("9b", archs.by_name("sm_86"))
    assert not verdict.runs and verdict.status == "does not run"
    monkeypatch.setenv("LADDER_UNGRADABLE", "zero")
    with pytest.raises(NotGradable, match="(?s)nothing was timed.*fp8e4nv not supported in this architecture"):
        settle_unmeasured(verdict, "block-scaled FP8 GEMM")
    monkeypatch.setenv("LADDER_UNGRADABLE", "full")
    settle_unmeasured(verdict, "block-scaled FP8 GEMM")
    assert "this cell gets its points" in capsys.readouterr().out


def test_the_mx_bar_is_reported_on_hopper_and_graded_on_blackwell():
    from grader.harness.bars import bar_for
    from grader.harness.feasibility import gradability

    hopper = gradability("9c-stretch", archs.by_name("sm_90"))
    assert hopper.status == "out of reach" and "bf16 MMA" in hopper.reason()
    assert bar_for("9c-stretch", "sm_100").graded and not bar_for("9c-stretch", "sm_90").graded


# ------------------------------------------------------------------------------------- the kernels, interpreted

INTERPRETED = CHECK_OUTCOME + r"""
import numpy as np
import torch
from grader.cuda import interpreter
from grader.chapters import ch09
from submissions.build import launchers

interpreter.prepare()
cells = ["napkin-solution", "quantize-solution", "gemm-solution", "curve-solution", "mx-solution"]
found = {}
for chapter, name in (("ch09", "correct"), ("ch09", "two_pass_9a"), ("ch09", "every_step_9b"),
                      ("ch09", "fp16_mma_9b"), ("ch09", "wrong")):
    ns = launchers(chapter, name, cells)
    found[name] = {"quantize": outcome(ch09.check_quantize, ns["quantize"], trials=1),
                   "fp16": outcome(ch09.check_quantize, ns["quantize"], trials=1, dtype=torch.float16),
                   "gemm": outcome(ch09.check_fp8_gemm, ns["fp8_gemm"], trials=1),
                   "fp8": outcome(ch09.check_fp8_tensor_cores, ns["fp8_gemm"]),
                   "mx": outcome(ch09.check_mx_gemm, ns["mx_gemm"]),
                   "curve": outcome(ch09.check_curve_reading, ns["read_curve"])}
ns = launchers("ch09", "correct", cells)
found["correct"]["hidden"] = outcome(ch09.check_quantize, ns["quantize"], hidden=True, trials=1)
found["correct"]["gemm_hidden"] = outcome(ch09.check_fp8_gemm, ns["fp8_gemm"], hidden=True, trials=1)
found["correct"]["speed_9a"] = outcome(ch09.check_quantize_speed, ns["quantize"])
found["correct"]["speed_9b"] = outcome(ch09.check_fp8_gemm_speed, ns["fp8_gemm"])
found["correct"]["speed_9c"] = outcome(ch09.check_mx_gemm_speed, ns["mx_gemm"])
from submissions.build import _solution_sources, run_cell
from submissions.ch05 import stubbed
sources = _solution_sources("09_low_precision")
stub = {"__name__": "ch09_stub"}
exec("import torch", stub)
for gid in cells:
    run_cell(stubbed(sources[gid]), stub, f"<ch09 stub {gid}>")
found["stub"] = {"quantize": outcome(ch09.check_quantize, stub["quantize"], trials=1),
                 "speed_9b": outcome(ch09.check_fp8_gemm_speed, stub["fp8_gemm"]),
                 "fp8": outcome(ch09.check_fp8_tensor_cores, stub["fp8_gemm"])}
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_script(INTERPRETED)


@pytest.mark.slow
def test_the_solution_passes_every_correctness_check_in_the_interpreter(interpreted):
    """About 40 s on 2 cores: the solution, four students and a stub through every check a CPU can make."""
    correct = interpreted["correct"]
    for key in ("quantize", "fp16", "gemm", "fp8", "mx", "curve", "hidden", "gemm_hidden"):
        assert correct[key] == "pass", (key, correct[key])
    for key, exercise in (("speed_9a", "9a"), ("speed_9b", "9b")):
        assert correct[key].startswith(f"NoGPUError: no GPU: speed not measured for exercise {exercise}"), correct[key]
    assert correct["speed_9c"] == "pass"   # a stretch cell says "no GPU" and carries on (printed, not raised)


@pytest.mark.slow
def test_the_rungs_are_correct_and_the_fp16_tiles_are_refused_by_their_count(interpreted):
    assert interpreted["two_pass_9a"]["quantize"] == "pass"
    every = interpreted["every_step_9b"]
    assert every["gemm"] == every["fp8"] == "pass", every
    fp16 = interpreted["fp16_mma_9b"]
    assert fp16["gemm"] == "pass", fp16
    assert fp16["fp8"].startswith("CheckFailed") and "only 0 of them on fp8 operands" in fp16["fp8"], fp16["fp8"]


@pytest.mark.slow
def test_the_wrong_student_fails_every_exercise(interpreted):
    wrong = interpreted["wrong"]
    for key in ("quantize", "gemm", "mx", "curve"):
        assert wrong[key].startswith("CheckFailed"), (key, wrong[key])
    assert "codes differ" in wrong["quantize"] and "wrong result" in wrong["gemm"]


@pytest.mark.slow
def test_the_stub_is_not_written_yet(interpreted):
    for key, said in interpreted["stub"].items():
        assert said.startswith("NotImplementedYet: exercise 9"), (key, said)


# ------------------------------------------------------------------------------------- the kernels, compiled

CROSS = r"""
import collections, json, re
import torch
from grader.cuda import archs, crosscompile
from grader.notebooks import shipped
from grader.chapters import ch09

notebook = shipped.chapter_notebooks()["ch09"]
found = {}
for name in ("sm_80", "sm_89", "sm_90"):
    arch = archs.by_name(name)
    ns = shipped.solution_namespace("ch09", notebook, arch)
    calls = {
        "quantize": lambda: ns["quantize"](torch.empty(8192, 7168, device="meta", dtype=torch.bfloat16),
                                           torch.empty(8192, 7168, device="meta", dtype=torch.float8_e4m3fn),
                                           torch.empty(56, 8192, device="meta")),
        "gemm": lambda: ns["fp8_gemm"](torch.empty(4096, 7168, device="meta", dtype=torch.float8_e4m3fn),
                                       torch.empty(56, 4096, device="meta"),
                                       torch.empty(7168, 7168, device="meta", dtype=torch.float8_e4m3fn),
                                       torch.empty(56, 56, device="meta"),
                                       torch.empty(4096, 7168, device="meta", dtype=torch.bfloat16)),
    }
    entry = {}
    for what, call in calls.items():
        try:
            builds = [b for launch in crosscompile.record(call) for b in crosscompile.build(launch, arch)]
        except Exception as exc:
            entry[what] = {"error": str(exc).splitlines()[-1]}
            continue
        ops = collections.Counter()
        for b in builds:
            ops.update(re.findall(r"(?:wgmma\.mma_async|mma\.sync)[\w.]*|cvt\.rn\.satfinite\.e4m3x2\.f32|div\.rn\.f32|"
                                  r"div\.full\.f32|div\.approx\.f32", b.ptx))
        entry[what] = {"ops": dict(ops), "problems": [p for b in builds for p in b.problems(arch)],
                       "shared": [b.shared for b in builds], "variants": len(builds)}
    found[name] = entry
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def compiled():
    return run_script(CROSS, interpret=False)


@pytest.mark.slow
def test_the_solution_compiles_to_fp8_tensor_cores_on_sm89_and_sm90_and_not_below(compiled):
    """About 30 s on 2 cores (three configurations of the GEMM and the quantize kernel, twice). The chapter is not
    in tests/cuda/test_cross_arch.py: below sm_89 Triton refuses its fp8 type."""
    assert "fp8e4nv not supported in this architecture" in compiled["sm_80"]["quantize"]["error"]
    assert "fp8e4nv not supported in this architecture" in compiled["sm_80"]["gemm"]["error"]
    for name, mma in (("sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
                      ("sm_90", "wgmma.mma_async.sync.aligned.m64n")):
        gemm = compiled[name]["gemm"]
        assert gemm["variants"] >= 1 and not gemm["problems"], gemm
        assert any(op.startswith(mma) and ".e4m3.e4m3" in op for op in gemm["ops"]), gemm["ops"]
        assert not any(".f16.f16" in op or ".bf16.bf16" in op for op in gemm["ops"]), gemm["ops"]
        quantize = compiled[name]["quantize"]["ops"]
        # exact division (tl.div_rn) and the saturating cast, and no approximate division
        assert quantize.get("cvt.rn.satfinite.e4m3x2.f32") and quantize.get("div.rn.f32"), quantize
        assert not quantize.get("div.full.f32") and not quantize.get("div.approx.f32"), quantize


def test_tritons_slash_on_fp32_is_an_approximate_division():
    """The text's claim that `/` is not torch's division: Triton 3.9's PTX for sm_90."""
    import triton
    import triton.language as tl

    from grader.cuda import crosscompile

    with crosscompile.quiet_triton():
        @triton.jit
        def ladder_division_probe(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            tl.store(y_ptr + offs, x / tl.max(x, axis=0))

    x = torch.empty(128, device="meta")
    (launch,) = crosscompile.record(lambda: ladder_division_probe[(1,)](x, torch.empty_like(x), BLOCK=128))
    (built,) = crosscompile.build(launch, archs.by_name("sm_90"))
    assert "div.full.f32" in built.ptx and "div.rn.f32" not in built.ptx


# ------------------------------------------------------------------------------------- the notebook

@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["09_low_precision"], indirect=True)
def test_solution_on_cpu_grades_what_a_cpu_can_and_says_no_gpu_for_the_rest(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid in ("napkin-test", "quantize-visible", "quantize-hidden", "gemm-visible", "gemm-hidden", "gemm-fp8",
                "curve-test", "diagnose-test", "mx-test"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    for gid in ("quantize-speed", "gemm-speed"):
        assert cells[gid]["error"]["ename"] == "NoGPUError", cells[gid]
    assert nb["score"] == 14 and nb["max_score"] == 18


# ------------------------------------------------------------------------------------- GPU

@pytest.mark.gpu
def test_gpu_rungs_are_correct_and_counted():
    from submissions.build import launchers

    cells = ["quantize-solution", "gemm-solution"]
    for name in ("correct", "two_pass_9a"):
        ch09.check_quantize(launchers("ch09", name, cells)["quantize"], trials=1)
    for name in ("correct", "every_step_9b"):
        gemm = launchers("ch09", name, cells)["fp8_gemm"]
        ch09.check_fp8_gemm(gemm, trials=1)
        ch09.check_fp8_tensor_cores(gemm)
    fp16 = launchers("ch09", "fp16_mma_9b", cells)["fp8_gemm"]
    ch09.check_fp8_gemm(fp16, trials=1)
    with pytest.raises(CheckFailed) as exc:
        ch09.check_fp8_tensor_cores(fp16)
    assert exc.value.reason == "no-fp8-tensor-cores"


@pytest.mark.gpu
def test_gpu_solution_error_stays_inside_its_bound(capsys):
    """How much of the tolerance the FP8 tensor cores use, at the timing shape: printed for the record."""
    from submissions.build import launchers

    gemm = launchers("ch09", "correct", ["gemm-solution"])["fp8_gemm"]
    gen = torch.Generator(device="cuda").manual_seed(9)
    size = ch09.GEMM_SPEED_SIZE
    inputs = ch09._gemm_inputs(size, gen, "cuda")
    out = torch.empty(size[0], size[1], device="cuda", dtype=torch.bfloat16)
    gemm(*inputs, out)
    wide = [t.double() for t in inputs]
    want = ch09.gemm_reference(*wide)
    allowed = 2.0 ** -8 * want.abs() + ch09.gemm_error_bound(*wide)
    used = ((out.double() - want).abs() / allowed).max().item()
    print(f"largest error / allowed at {size}: {used:.4f}")
    assert used < 1


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    failed = {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert code == 0 and not failed, failed
