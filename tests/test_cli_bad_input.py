"""Every `ladder` subcommand and every one of its options, given bad input, answers in one or two lines that
say what is wrong and what to do, with exit code 2 and no traceback; `ladder check --json` answers with the
JSON object of docs/check-json.md. The subcommands and options are read from the parser itself, so a new
one fails `test_every_subcommand_and_option_has_bad_inputs` until it has a row in BAD_INPUTS.

Everything here is refused before any notebook runs: in-process `main([...])` calls, a few seconds in all.
"""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from conftest import ROOT
from grader.cli import build_parser, commands, main

CH1 = str(ROOT / "course" / "01_vector_add" / "01_vector_add.ipynb")
CH7 = ROOT / "course" / "07_reductions" / "07_reductions.ipynb"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Bad inputs on disk: {name: absolute path}."""
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "empty.ipynb").write_bytes(b"")
    (tmp / "corrupt.ipynb").write_text('{"cells": [')
    (tmp / "object.ipynb").write_text("{}")
    (tmp / "list.ipynb").write_text("[1, 2]")
    (tmp / "notes.txt").write_text("not a notebook\n")
    (tmp / "plain.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    shutil.copyfile(CH7, tmp / "01_vector_add.ipynb")   # chapter 7's notebook under chapter 1's name
    (tmp / "folder").mkdir()
    (tmp / "two").mkdir()
    for name in ("a.ipynb", "b.ipynb"):
        shutil.copyfile(CH1, tmp / "two" / name)
    (tmp / "empty-class").mkdir()
    (tmp / "twice").mkdir()
    shutil.copyfile(CH1, tmp / "twice" / "ann.ipynb")
    (tmp / "twice" / "ann" / "01_vector_add").mkdir(parents=True)
    shutil.copyfile(CH1, tmp / "twice" / "ann" / "01_vector_add" / "01_vector_add.ipynb")
    (tmp / "kernel.cu").write_text("__global__ void k() {}\n")
    return {p.name: str(p) for p in tmp.iterdir()} | {"missing": str(tmp / "missing.ipynb"),
                                                       "missing-dir": str(tmp / "nowhere" / "x.ipynb")}


# Learner notebooks named by a path or a chapter, as `check`, `compile` and `profile` take them.
BAD_NOTEBOOKS = ["missing", "missing-dir", "folder", "two", "empty.ipynb", "corrupt.ipynb", "object.ipynb",
                 "list.ipynb", "notes.txt", "plain.ipynb", "01_vector_add.ipynb", "@9", "@9z", "@nope.ipynb",
                 "@relative/missing.ipynb"]


def _notebook_cases(*before: str, after: tuple[str, ...] = ()) -> list[list[str]]:
    """`@word` is given as written (a chapter, or a path relative to an empty folder); other names are files
    of the fixture."""
    return [[*before, name[1:] if name.startswith("@") else "{" + name + "}", *after] for name in BAD_NOTEBOOKS]


# (subcommand, option or positional) -> bad command lines. A name in {braces} is a file of the fixture.
BAD_INPUTS: dict[tuple[str, str], list[list[str]]] = {
    ("start", "chapters"): [["start", "9"], ["start", "nope"]],
    ("start", "--dir"): [["start", "--dir", "{notes.txt}", "1"], ["start", "--dir"]],
    ("start", "--keep-instructor-tools"): [["start", "--keep-instructor-tools=yes", "1"]],
    ("lab", "--learner"): [["lab", "--learner", "--instructor"], ["lab"]],
    ("lab", "--instructor"): [["lab", "--instructor=1"]],
    ("lab", "--level"): [["lab", "--learner", "--level", "system"]],
    ("doctor", "--remeasure"): [["doctor", "--remeasure=1"]],
    ("doctor", "--target"): [["doctor", "--target", "sm_10"], ["doctor", "--target"]],
    ("doctor", "--kernels"): [["doctor", "--kernels=1"]],
    ("doctor", "--json"): [["doctor", "--json=1"]],
    ("compile", "paths"): _notebook_cases("compile") + [["compile"], ["compile", "{folder}/missing.cu"]],
    ("compile", "--arch"): [["compile", "--arch", "sm80", "{kernel.cu}"], ["compile", "--arch", "", "{kernel.cu}"]],
    ("profile", "notebook"): _notebook_cases("profile", after=("--exercise", "1a")),
    ("profile", "--exercise"): [["profile", CH1, "--exercise", "9z"], ["profile", CH1, "--exercise", "7a"],
                                ["profile", CH1]],
    ("profile", "--launcher"): [["profile", CH1, "--exercise", "1a", "--launcher"]],
    ("profile", "--size"): [["profile", CH1, "--exercise", "1a", "--size", "[1, x]"],
                            ["profile", CH1, "--exercise", "1a", "--size", "-4"]],
    ("profile", "--out"): [["profile", CH1, "--exercise", "1a", "--out", "{notes.txt}"]],
    ("release", "assignments"): [["release", "99_nope"], ["release", "--check", "99_nope"]],
    ("release", "--check"): [["release", "--check=1"]],
    ("release", "--force"): [["release", "--force", "99_nope"]],
    ("check", "notebooks"): _notebook_cases("check") + [["check"]],
    ("check", "--json"): _notebook_cases("check", "--json") + [["check", "--json", "--repeat", "x", CH1],
                                                               ["check", "--json", "--sanitize", "{corrupt.ipynb}"]],
    ("check", "--repeat"): [["check", "--repeat", "0", CH1], ["check", "--repeat", "x", CH1]],
    ("check", "--isolated"): [["check", "--isolated=1", CH1]],
    ("check", "--sanitize"): [["check", "--sanitize", "--repeat", "2", CH1], ["check", "--sanitize", "{empty.ipynb}"]],
    ("check", "--tool"): [["check", "--tool", "memcheck", CH1], ["check", "--sanitize", "--tool", "nope", CH1]],
    ("check", "--sanitize-timeout"): [["check", "--sanitize", "--sanitize-timeout", "-1", CH1],
                                      ["check", "--sanitize-timeout", "10", CH1]],
    ("grade", "submissions"): [["grade", "{missing}", "--assignment", "01_vector_add"],
                               ["grade", "{notes.txt}", "--assignment", "01_vector_add"],
                               ["grade", "{empty-class}", "--assignment", "01_vector_add"],
                               ["grade", "{twice}", "--assignment", "01_vector_add"]],
    ("grade", "--assignment"): [["grade", "{two}", "--assignment", "99_nope"], ["grade", "{two}"]],
    ("grade", "--workspace"): [["grade", "{two}", "--assignment", "01_vector_add", "--workspace", "{notes.txt}"]],
    ("grade", "--csv"): [["grade", "{two}", "--assignment", "01_vector_add", "--csv", "{folder}"]],
    ("grade", "--csv-cells"): [["grade", "{two}", "--assignment", "01_vector_add", "--csv-cells", "{folder}"]],
    ("grade", "--bars"): [["grade", "{two}", "--assignment", "01_vector_add", "--bars", "{missing}"]],
    ("grade", "--ungradable"): [["grade", "{two}", "--assignment", "01_vector_add", "--ungradable", "half"]],
    ("grade", "--db"): [["grade", "{two}", "--assignment", "01_vector_add", "--db", "not a url"]],
    ("grade", "--gpus"): [["grade", "{two}", "--assignment", "01_vector_add", "--gpus", "0"],
                          ["grade", "{two}", "--assignment", "01_vector_add", "--gpus", "two"]],
    ("grade", "--workers"): [["grade", "{two}", "--assignment", "01_vector_add", "--workers", "0"],
                             ["grade", "{two}", "--assignment", "01_vector_add", "--workers", "2", "--gpus", "2"]],
    ("grade", "--scheduler"): [["grade", "{two}", "--assignment", "01_vector_add", "--scheduler", "nowhere"]],
    ("grade", "--cluster"): [["grade", "{two}", "--assignment", "01_vector_add", "--cluster", "mesos"]],
    ("grade", "--jobs"): [["grade", "{two}", "--assignment", "01_vector_add", "--cluster", "slurm", "--jobs", "0"],
                          ["grade", "{two}", "--assignment", "01_vector_add", "--jobs", "4"]],
    ("grade", "--cluster-option"): [["grade", "{two}", "--assignment", "01_vector_add", "--cluster-option", "q=gpu"],
                                    ["grade", "{two}", "--assignment", "01_vector_add", "--cluster", "slurm",
                                     "--cluster-option", "queue"]],
    ("grade", "--retries"): [["grade", "{two}", "--assignment", "01_vector_add", "--retries", "-1"]],
    ("grade", "--no-progress"): [["grade", "{two}", "--assignment", "01_vector_add", "--no-progress=1"]],
    ("grade", "--leaderboard"): [["grade", "{two}", "--assignment", "01_vector_add", "--leaderboard", "everyone"]],
    ("calibrate", "--chapters"): [["calibrate", "--chapters", "9"], ["calibrate", "--chapters", "one"]],
    ("calibrate", "--bars"): [["calibrate", "--bars", "9z"], ["calibrate", "--chapters", "1", "--bars", "5a"]],
    ("calibrate", "--runs"): [["calibrate", "--runs", "0"], ["calibrate", "--runs", "x"]],
    ("calibrate", "--out"): [["calibrate", "--out", "{folder}"]],
    ("calibrate", "--gpus"): [["calibrate", "--gpus", "0"], ["calibrate", "--gpus", "two"]],
    ("report", "workspace"): [["report", "{missing}"], ["report", "{notes.txt}"], ["report", "{folder}"], ["report"]],
    ("report", "--assignment"): [["report", "{folder}", "--assignment", "99_nope"]],
    ("report", "--db"): [["report", "{folder}", "--db", "not a url"]],
    ("report", "--leaderboard"): [["report", "{folder}", "--leaderboard", "everyone"]],
    ("grade", "--verbose"): [["grade", "{two}", "--assignment", "01_vector_add", "--verbose=1"]],
    ("grade", "--isolated"): [["grade", "{two}", "--assignment", "01_vector_add", "--isolated", "--in-kernel"]],
    ("grade", "--in-kernel"): [["grade", "{two}", "--assignment", "01_vector_add", "--in-kernel=1"]],
}
CASES = [(key, argv) for key, lines in BAD_INPUTS.items() for argv in lines]


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Each argument of a subcommand: its first option string, or a positional's name."""
    return [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
            if not isinstance(a, argparse._HelpAction)]


def test_every_subcommand_and_option_has_bad_inputs():
    parser = build_parser()
    walked = {(name, option) for name, sub in commands(parser).items() for option in _options(sub)}
    assert walked - set(BAD_INPUTS) == set(), "options with no bad input in BAD_INPUTS"
    assert set(BAD_INPUTS) - walked == set(), "rows of BAD_INPUTS for options that no longer exist"


def _argv(line: list[str], files: dict[str, str]) -> list[str]:
    out = []
    for word in line:
        for name, path in files.items():
            word = word.replace("{" + name + "}", path)
        out.append(word)
    return out


@pytest.mark.parametrize("key,line", CASES, ids=[f"{k[0]} {k[1]} {' '.join(line[1:])}"[:90] for k, line in CASES])
def test_bad_input_is_answered_in_a_line_or_two_with_exit_code_2(key, line, files, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)   # relative paths are read from an empty folder
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    argv = _argv(line, files)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out[-2000:], err[-2000:])
    assert "Traceback" not in out + err, (argv, out, err)
    message = err.strip().splitlines()
    assert message and len(message) <= 2, (argv, err)
    assert message[0].startswith(f"ladder {line[0]}: ") and len(message[0]) > len(f"ladder {line[0]}: ") + 10, err
    if line[0] == "check" and "--json" in line:
        answer = json.loads(out)
        schema = "kernel-ladder.sanitize/1" if "--sanitize" in line else "kernel-ladder.check/1"
        assert answer["schema"] == schema and answer["passed"] is False
        assert answer["error"] and answer["reason"] and answer["notebooks"] == []
    else:
        assert out == "", (argv, out)


def test_a_notebook_of_another_chapter_is_named_as_such(files, capsys):
    assert main(["check", files["01_vector_add.ipynb"]]) == 2
    assert "is chapter 7's notebook (07_reductions), not chapter 1's" in capsys.readouterr().err


def test_a_chapter_outside_any_repository_is_not_called_a_missing_path(monkeypatch, tmp_path, capsys):
    import grader.notebooks.recognise as recognise

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(recognise, "course_root", lambda *near: None)
    assert main(["check", "1"]) == 2
    err = capsys.readouterr().err
    assert "no course repository" in err and "no such" not in err


def test_a_chapter_is_found_from_inside_its_own_folder(monkeypatch, tmp_path):
    from grader.cli import resolve_notebook

    folder = tmp_path / "work" / "01_vector_add"
    folder.mkdir(parents=True)
    shutil.copyfile(CH1, folder / "01_vector_add.ipynb")
    monkeypatch.chdir(folder)
    path, chapter = resolve_notebook("1")
    assert path.resolve() == (folder / "01_vector_add.ipynb").resolve() and chapter == "01_vector_add"


def test_an_exercise_without_recorded_rungs_says_so(monkeypatch, capsys):
    """Without a GPU nothing is profiled (exit 2, and why); chapter 7's stretch goal 7c has no recorded rungs,
    and the answer says that instead of showing nothing."""
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    assert main(["profile", str(CH7), "--exercise", "7c"]) == 2
    out = capsys.readouterr().out
    assert "Not profiled: " in out and "Exercise 7c has no recorded rungs to compare with (recorded: 1a," in out
