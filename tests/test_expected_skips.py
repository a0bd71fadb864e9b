"""The check of a full run's skips (tests/expected_skips.py): what counts as the whole suite, and which
skips it rejects."""

from types import SimpleNamespace

import pytest

import expected_skips
from conftest import ROOT

GPU = "needs an NVIDIA GPU: no GPU found"


def _config(*args, keyword="", markexpr="", **more):
    option = SimpleNamespace(keyword=keyword, markexpr=markexpr, deselect=more.pop("deselect", None),
                             lf=more.pop("lf", False), ignore=None, ignore_glob=None)
    return SimpleNamespace(args=list(args), option=option, rootpath=ROOT, getini=lambda name: ["tests"])


@pytest.mark.parametrize("config, whole", [
    (_config(str(ROOT / "tests")), True),                        # `pytest`: args are the testpaths
    (_config("tests/"), True),
    (_config("tests/test_layout.py"), False),
    (_config("tests", markexpr="not slow"), False),
    (_config("tests", keyword="exploits"), False),
    (_config("tests", deselect=["tests/test_layout.py::x"]), False),
    (_config("tests", lf=True), False),
    (_config("tests", "tests/notebooks"), False),
])
def test_only_a_run_of_every_test_is_checked(config, whole, monkeypatch):
    monkeypatch.delenv("LADDER_CLASS", raising=False)
    assert expected_skips.whole_suite(config) is whole


def test_a_class_narrowed_by_ladder_class_is_not_the_whole_suite(monkeypatch):
    monkeypatch.setenv("LADDER_CLASS", "correct")
    assert not expected_skips.whole_suite(_config("tests"))


def test_exactly_the_listed_gpu_skips_pass():
    assert expected_skips.problems({"a::t": GPU, "b::t": "needs a GPU: every cell says no-gpu"}, ["a::t", "b::t"]) == []


@pytest.mark.parametrize("skipped, listed, problem", [
    ({"a::t": GPU, "c::t": "PostgreSQL is not installed"}, ["a::t"], "skipped, not in gpu_only_skips.txt: c::t"),
    ({"a::t": GPU}, ["a::t", "b::t"], "listed in gpu_only_skips.txt but not skipped: b::t"),
    ({"a::t": "psycopg is not installed"}, ["a::t"], "for a reason other than a missing GPU: a::t"),
    ({"a::t": GPU}, ["a::t", "a::t"], "lists a test twice"),
])
def test_any_other_skip_or_a_moved_count_is_a_problem(skipped, listed, problem):
    found = expected_skips.problems(skipped, listed)
    assert len(found) == 1 and problem in found[0], found


def test_the_list_names_only_collected_gpu_tests():
    """Each listed node id names a test file that exists (a renamed file must move its lines too)."""
    listed = expected_skips.expected()
    assert listed and len(set(listed)) == len(listed)
    missing = sorted({node.split("::")[0] for node in listed if not (ROOT / node.split("::")[0]).is_file()})
    assert not missing, missing


def test_a_skip_reason_is_read_without_pytests_prefix():
    report = SimpleNamespace(longrepr=("tests/test_layout.py", 3, "Skipped: needs an NVIDIA GPU: none"))
    assert expected_skips.skip_reason(report) == "needs an NVIDIA GPU: none"


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("1", pytest.fail.Exception),
                                         ("", pytest.skip.Exception), ("false", pytest.skip.Exception)])
def test_what_ci_needs_fails_under_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    from grading.classroom import missing_in_ci

    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="PostgreSQL is not installed"):
        missing_in_ci("PostgreSQL is not installed")
