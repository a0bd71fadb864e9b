"""Pass bars: one data file, every graded exercise has a bar and every bar an exercise."""

import pytest

from grader.harness.bars import bar_for, load_bars
from grader.chapters import all_bar_keys, all_exercises
from grader.errors import LadderError


def test_every_exercise_has_a_bar_and_every_bar_an_exercise():
    bars = set(load_bars())
    used = all_bar_keys()
    assert bars == set(used), (f"bars without an exercise: {sorted(bars - set(used))}; "
                               f"exercises without a bar: {sorted(set(used) - bars)}")
    exercises = all_exercises()
    for bar_key, ex_key in used.items():
        assert ex_key in exercises, f"bar {bar_key} points at unknown exercise {ex_key}"
    for key in exercises:
        # An exercise is graded under its own key; one that only stretch bars name (chapter 7's 7c) is not.
        named_by = [b for b, e in used.items() if e == key]
        assert named_by, f"exercise {key} has no bar"
        if key in bars:
            assert load_bars()[key].graded, f"exercise {key}'s own bar is not graded"
        else:
            assert not any(load_bars()[b].graded for b in named_by), f"graded exercise {key} has no bar of its own"


def test_default_bars_match_the_course_plan():
    assert bar_for("1a").bar == pytest.approx(0.70)
    assert bar_for("1b").bar == pytest.approx(1.5)
    stretch = bar_for("1a-stretch")
    assert stretch.bar == pytest.approx(0.87) and not stretch.graded   # calibrated on an H200


def test_instructor_override_replaces_only_what_it_names(tmp_path, monkeypatch):
    override = tmp_path / "bars.toml"
    override.write_text('["1a"]\nbar = 0.5\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    bars = load_bars()
    assert bars["1a"].bar == 0.5 and bars["1a"].source == str(override)
    assert bars["1a"].baseline == "torch.add"     # fields not named keep their defaults
    assert bars["1b"].bar == pytest.approx(1.5)   # keys not named keep their defaults


@pytest.mark.parametrize("text, message", [
    ('["1a"]\nbar = "fast"\n', "not a number"),
    ('["1a"]\nbar = -1\n', "must be positive"),
    ('["1a"\nbar = 1\n', "not valid TOML"),
])
def test_bad_override_files_name_the_problem(tmp_path, monkeypatch, text, message):
    override = tmp_path / "bars.toml"
    override.write_text(text)
    monkeypatch.setenv("LADDER_BARS", str(override))
    with pytest.raises(LadderError, match=message):
        load_bars()


def test_missing_override_file_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LADDER_BARS", str(tmp_path / "nope.toml"))
    with pytest.raises(LadderError, match="does not name a file"):
        load_bars()


def test_unknown_bar_key():
    with pytest.raises(LadderError, match="no pass bar for exercise 'zz'"):
        bar_for("zz")


def test_an_override_set_after_start_changes_nothing_in_that_process(tmp_path, monkeypatch, capsys):
    """An answer cell that points LADDER_BARS at a lower bar, in the notebook's kernel, after the setup
    cell's start(): `ladder check` must judge by the real bar, as the isolated verifier does
    (tests/submissions/wrong/bars_env_override.py is the same cheat, end to end on a GPU)."""
    from grader import config
    from grader.harness.session import start

    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")   # start() without measuring anything
    start(5)
    override = tmp_path / "bars.toml"
    override.write_text('["5a"]\nbar = 0.01\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "")
    start(5)                                          # a second start() does not re-read them
    assert config.bars_override() is None and config.force_no_gpu()
    assert bar_for("5a").source == "grader/bars.toml" and bar_for("5a").bar > 0.01
    config.unpin()
    assert config.bars_override() == override, "outside a learner's process the setting is read when asked for"
