"""Bars per architecture, and speed cells whose bar no correct kernel can reach on a GPU: the bars file's
`by_arch` and `needs`, the verdict from compiling for an architecture, and the instructor's policy."""

import pytest

from grader import config
from grader.cuda import archs
from grader.cuda.capabilities import Finding
from grader.errors import LadderError, NotGradable, REASONS, from_dict, as_dict
from grader.harness import exercise, feasibility
from grader.harness.bars import bar_for, load_bars, load_table

SM75, SM86, SM90 = (archs.by_name(n) for n in ("sm_75", "sm_86", "sm_90"))


def test_a_bar_for_an_architecture_replaces_the_exercise_fields_there_only():
    base, sm86, sm89 = bar_for("5a", None), bar_for("5a", "sm_86"), bar_for("5a", "sm_89")
    assert base.bar == pytest.approx(0.75) and base.arch is None
    assert sm86.bar == sm89.bar == pytest.approx(0.55) and sm86.arch == "sm_86" and sm89.arch == "sm_89"
    assert sm86.baseline == base.baseline and sm86.needs == base.needs    # fields it does not name are kept
    assert "derived, not measured" in sm86.calibration
    assert bar_for("5a", "sm_90").bar == base.bar and bar_for("5a", "sm_90").arch is None


def test_without_a_gpu_the_bars_are_the_defaults(monkeypatch):
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    assert bar_for("5a").bar == pytest.approx(0.75)


def test_the_architecture_being_compiled_for_picks_its_bar():
    with archs.targeting(SM86):
        assert bar_for("5a").bar == pytest.approx(0.55)
    with archs.targeting(SM90):
        assert bar_for("5a").bar == pytest.approx(0.75)


def test_every_calibration_names_the_gpu_it_was_measured_on():
    table, _ = load_table()
    for key, fields in table.items():
        entries = [fields, *(fields.get("by_arch") or {}).values()]
        for entry in entries:
            if entry.get("provisional", fields.get("provisional")):
                continue   # not calibrated on any GPU yet, and says so: tests/test_records.py keeps it from shipping
            text = entry.get("calibration", "")
            assert text and any(gpu in text for gpu in ("H100", "H200")), f"{key}: {text!r}"
            assert "not yet timed" not in text, f"{key}: stale calibration {text!r}"


def test_the_bars_that_need_tensor_cores_for_tl_dot_are_those_timed_against_torchs_tensor_cores():
    needing = {key for key, bar in load_bars(None).items() if "tensor-core tl.dot" in bar.needs}
    from grader.chapters import ch06

    fast = {ch06.fast_bar_key(d, causal) for d, causal in ch06.FAST_CASES}
    assert needing == {"5a", "5a-stretch", "5b", "6", "6-stretch", *fast, "6b", "8b"}   # 8b: the block's matmuls are tl.dot
    assert load_bars(None)["6-causal"].needs == ()      # against the learner's own kernel: reachable anywhere
    assert set(load_bars(None)["4-stretch"].needs) == {"WMMA", "cp.async"}


def test_an_override_changes_one_architecture_field_by_field(tmp_path, monkeypatch):
    override = tmp_path / "bars.toml"
    override.write_text('["5a".by_arch.sm_89]\nbar = 0.6\n\n["5a".by_arch."sm_75 sm_80"]\nbar = 0.1\n'
                        'calibration = "my T4 and A100, 10 runs"\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    assert bar_for("5a", "sm_89").bar == pytest.approx(0.6)
    assert "derived" in bar_for("5a", "sm_89").calibration          # the default's other fields stay
    assert bar_for("5a", "sm_86").bar == pytest.approx(0.55)          # sm_86 was not named
    assert bar_for("5a", "sm_75").bar == pytest.approx(0.1) and bar_for("5a", "sm_80").arch == "sm_80"


@pytest.mark.parametrize("text, message", [
    ('["5a".by_arch.turing]\nbar = 0.1\n', "not an architecture"),
    ('["5a"]\nneeds = "tensor cores"\n', "must be a list"),
    ('["5a"]\nbarr = 0.1\n', "unknown field"),
    ('["5a".by_arch]\nsm_86 = 0.5\n', "must be a table"),
])
def test_bad_architecture_entries_name_the_problem(tmp_path, monkeypatch, text, message):
    override = tmp_path / "bars.toml"
    override.write_text(text)
    monkeypatch.setenv("LADDER_BARS", str(override))
    with pytest.raises(LadderError, match=message):
        load_bars(None)


# ------------------------------------------------------------------------- gradability, by compiling

def test_sm75_cannot_grade_the_triton_bars_and_says_why_from_the_compile():
    verdict = feasibility.gradability("5a", SM75)
    assert verdict.status == "not gradable" and verdict.runs and not verdict.reachable
    (finding,) = verdict.missing
    assert finding.capability == "tensor-core tl.dot" and "fma.rn.f32" in finding.evidence and "no mma" in finding.evidence
    assert "0.75x torch.mm" in verdict.reason() and "Correctness is graded" in verdict.reason()
    assert feasibility.gradability("6-causal", SM75).status == "graded"
    assert feasibility.gradability("5a-stretch", SM75).status == "out of reach"
    stretch = feasibility.gradability("4-stretch", SM75)
    assert stretch.status == "does not run" and "cp.async" in stretch.reason()


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_architectures_with_tensor_cores_for_tl_dot_grade_every_bar(arch):
    rows = feasibility.table(archs.by_name(arch))
    # Except chapter 5's Hopper rung, which needs TMA: it does not run before sm_90.
    hopper = [r.verdict.status for r in rows if r.key == "5a-hopper"]
    assert hopper == (["reported"] if arch == "sm_90" else ["does not run"]), hopper
    rows = [r for r in rows if r.key != "5a-hopper"]
    # Chapter 9's need fp8 (sm_89 and later) and its stretch block-scaled MMA (sm_100 and later).
    fp8 = {r.key: r.verdict.status for r in rows if r.chapter == 9}
    fp8_here = arch in ("sm_89", "sm_90")
    assert fp8 == {"9a": "graded" if fp8_here else "does not run", "9a-copy": "graded" if fp8_here else "does not run",
                   "9b": "graded" if fp8_here else "does not run",
                   "9c-stretch": "out of reach" if fp8_here else "does not run"}, fp8
    rows = [r for r in rows if r.chapter != 9]
    assert {r.verdict.status for r in rows} == {"graded", "reported"}, [(r.key, r.verdict.status) for r in rows]


def test_a_bar_set_for_an_architecture_is_graded_there_whatever_it_needs(tmp_path, monkeypatch):
    override = tmp_path / "bars.toml"
    override.write_text('["5a".by_arch.sm_75]\nbar = 0.05\ncalibration = "T4, 10 runs, FMA-only Triton"\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    verdict = feasibility.gradability("5a", SM75)
    assert verdict.status == "graded" and verdict.bar.bar == pytest.approx(0.05)


# ------------------------------------------------------------------------- the policy, in a speed cell

class _Result:
    key, title, graded = "5a", "fp16 matmul", True

    def report(self):
        return "✗ 5a speed, fp16 matmul: below the bar (bar 0.75x torch.mm)\n  yours  12.0 ms\n  speedup 0.10x"


def _verdict():
    bar = bar_for("5a", None)
    return feasibility.Gradability(bar, SM75, (Finding("tensor-core tl.dot", "sm_75", False, "probe: FMA, no mma"),))


def test_policy_zero_raises_not_gradable_with_its_reason_code_and_never_a_plain_fail(monkeypatch):
    monkeypatch.delenv("LADDER_UNGRADABLE", raising=False)
    with pytest.raises(NotGradable) as info:
        feasibility.settle(_Result(), _verdict())
    text = str(info.value)
    assert info.value.reason == "not-gradable" and "not-gradable" in REASONS
    assert text.startswith("⊘ 5a speed, fp16 matmul: not gradable on this GPU") and "below the bar" not in text
    assert "probe: FMA, no mma" in text and "LADDER_UNGRADABLE=zero" in text and "speedup 0.10x" in text
    again = from_dict(as_dict(info.value))       # as it crosses from the verifier's process
    assert type(again) is NotGradable and again.reason == "not-gradable"


def test_policy_full_passes_the_cell_and_says_so(monkeypatch, capsys):
    monkeypatch.setenv("LADDER_UNGRADABLE", "full")
    result = _Result()
    assert feasibility.settle(result, _verdict()) is result
    out = capsys.readouterr().out
    assert "not gradable on this GPU" in out and "LADDER_UNGRADABLE=full" in out and "gets its points" in out


def test_an_unknown_policy_is_refused(monkeypatch):
    monkeypatch.setenv("LADDER_UNGRADABLE", "half")
    with pytest.raises(ValueError, match="LADDER_UNGRADABLE='half'"):
        config.ungradable_policy()


def test_check_speed_settles_an_out_of_reach_bar_instead_of_failing_it(monkeypatch):
    """The wiring in check_speed: on a GPU whose architecture cannot reach the bar, a slow but correct
    kernel gets "not gradable", not "below-bar"."""
    from grader.chapters import ch05

    monkeypatch.delenv("LADDER_UNGRADABLE", raising=False)
    monkeypatch.setattr(exercise, "_device", lambda device=None: "cuda")
    monkeypatch.setattr(exercise, "_requirements", lambda *a, **k: None)
    monkeypatch.setattr(exercise, "measure_speed", lambda *a, **k: _Result())
    monkeypatch.setattr(exercise, "not_gradable_here", lambda key: _verdict() if key == "5a" else None)
    with pytest.raises(NotGradable):
        exercise.check_speed(ch05.MATMUL, lambda a, b, out: None, "5a")
