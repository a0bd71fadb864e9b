"""The "diagnose" exercises (grader/profiling/diagnose.py, one case per chapter): every answer key is
shown by the recorded profiles it is about, and only that constraint is; the check accepts the key and
says where to look otherwise."""

import pytest

from grader import chapters
from grader.errors import CheckFailed, NotImplementedYet
from grader.profiling import diagnose

CASES = {name: chapters.module(name).DIAGNOSE for name in chapters.names() if hasattr(chapters.module(name), "DIAGNOSE")}
# A case's profiles are recorded on a GPU after its chapter is written: until then its key cannot be held to them, and
# tests/test_records.py refuses to let the chapter ship.
RECORDED = sorted(name for name, case in CASES.items() if case.recorded)


def test_every_chapter_has_a_case():
    assert set(chapters.names()) == set(CASES)
    assert len({c.binding for c in CASES.values()}) >= 5, "the cases cover most of the constraints"


@pytest.mark.parametrize("name", RECORDED)
def test_the_key_is_what_the_recorded_profiles_show(name):
    case = CASES[name]
    sig, beside = case.signatures()
    shown = {n for n, c in diagnose.CONSTRAINTS.items() if c.evidence(sig, beside)}
    # A kernel with no matrix product trivially leaves the tensor cores idle: that names nothing.
    assert shown - {"no-tensor-cores"} == {case.binding} - {"no-tensor-cores"} and case.binding in shown, shown
    assert case.rung != case.beside and len(set(case.choices)) == len(case.choices) >= 3


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_check_accepts_the_key_and_points_at_the_numbers_otherwise(name, capsys):
    case = CASES[name]
    check = chapters.module(name).check_diagnosis
    check(lambda: (case.binding, case.next_rung))
    assert f"✓ {case.key} diagnosis" in capsys.readouterr().out
    wrong = next(b for b in diagnose.CONSTRAINTS if b != case.binding)
    with pytest.raises(CheckFailed, match=f"is not bound by {wrong}.*look at"):
        check(lambda: (wrong, case.next_rung))
    other = next(c for c in case.choices if c != case.next_rung)
    with pytest.raises(CheckFailed, match=f"does not relieve {case.binding}"):
        check(lambda: (case.binding, other))
    with pytest.raises(CheckFailed, match="is not one of the constraints"):
        check(lambda: ("slow", case.next_rung))
    with pytest.raises(CheckFailed, match="should return a tuple"):
        check(lambda: case.binding)
    with pytest.raises(NotImplementedYet, match=f"exercise {case.key} is not written yet"):
        check(lambda: (_ for _ in ()).throw(NotImplementedError()))


def test_a_case_not_recorded_yet_still_shows_its_question_and_says_so(monkeypatch):
    from grader.profiling import recorded

    case = CASES["ch02"]
    monkeypatch.setattr(recorded, "PROFILES", recorded.PROFILES / "nowhere")
    recorded.index.cache_clear()
    try:
        text = diagnose.show(case)
    finally:
        recorded.index.cache_clear()
    assert "not recorded in this copy of the course yet" in text and "| naive |" not in text
    assert all(repr(c) in text for c in case.choices) and all(n in text for n in diagnose.CONSTRAINTS)


def test_show_prints_the_two_rungs_only_and_every_choice():
    case = CASES["ch02"]
    text = diagnose.show(case)
    assert "| unpadded_tile |" in text and "| naive |" in text and "| solution |" not in text
    assert all(repr(c) in text for c in case.choices) and all(n in text for n in diagnose.CONSTRAINTS)


def test_a_case_with_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match="not a constraint"):
        diagnose.Case("x", "2", "naive", "solution", "slow", "a", ("a", "b"), "")
    with pytest.raises(ValueError, match="not one of the choices"):
        diagnose.Case("x", "2", "naive", "solution", "uncoalesced", "c", ("a", "b"), "")


def test_too_few_programs_is_a_grid_under_one_wave_with_memory_idle():
    """Chapter 10's constraint, on a recorded signature made to look like the unsplit decode kernel: a grid of 32
    blocks on 132 SMs (launch__waves_per_multiprocessor well under 1) with DRAM nearly idle shows it; the same kernel
    with a full grid, or a small grid that keeps memory busy, does not."""
    import dataclasses

    from grader.profiling import recorded

    base = recorded.load("7a", "solution")
    rule = diagnose.CONSTRAINTS["too-few-programs"].evidence
    assert not any(rule(recorded.load(e, r), base) for e in recorded.exercises() for r in recorded.rungs(e))
    assert rule(dataclasses.replace(base, waves_per_sm=0.06, dram_pct=7.0), base)
    assert not rule(dataclasses.replace(base, waves_per_sm=3.9, dram_pct=7.0), base)
    assert not rule(dataclasses.replace(base, waves_per_sm=0.5, dram_pct=85.0), base)
