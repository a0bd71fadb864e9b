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
                 "list.ipynb", "notes.txt", "plain.ipynb", "01_vector_add.ipynb", "@99", "@9z", "@nope.ipynb",
                 "@relative/missing.ipynb"]


def _notebook_cases(*before: str, after: tuple[str, ...] = ()) -> list[list[str]]:
    """`@word` is given as written (a chapter, or a path relative to an empty folder); other names are files
    of the fixture."""
    return [[*before, name[1:] if name.startswith("@") else "{" + name + "}", *after] for name in BAD_NOTEBOOKS]


# (subcommand, option or positional) -> bad command lines. A name in {braces} is a file of the fixture.
BAD_INPUTS: dict[tuple[str, str], list[list[str]]] = {
    ("start", "chapters"): [["start", "99"], ["start", "nope"]],
    ("start", "--dir"): [["start", "--dir", "{notes.txt}", "1"], ["start", "--dir"]],
    ("start", "--keep-instructor-tools"): [["start", "--keep-instructor-tools=yes", "1"]],
    ("lab", "--learner"): [["lab", "--learner", "--instructor"], ["lab"]],
    ("lab", "--instructor"): [["lab", "--instructor=1"]],
    ("lab", "--level"): [["lab", "--learner", "--level", "system"]],
    ("doctor", "--remeasure"): [["doctor", "--remeasure=1"]],
    ("doctor", "--target"): [["doctor", "--target", "sm_10"], ["doctor", "--target"]],
    ("doctor", "--kernels"): [["doctor", "--kernels=1"]],
    ("doctor", "--json"): [["doctor", "--json=1"], ["doctor", "--json", "--target", "sm_99"]],
    ("compile", "paths"): _notebook_cases("compile") + [["compile"], ["compile", "{folder}/missing.cu"]],
    ("compile", "--arch"): [["compile", "--arch", "sm80", "{kernel.cu}"], ["compile", "--arch", "", "{kernel.cu}"],
                            ["compile", "--arch", "sm_99", "{kernel.cu}"], ["compile", "--arch", "sm_90,sm_99", CH1]],
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
    ("calibrate", "--chapters"): [["calibrate", "--chapters", "99"], ["calibrate", "--chapters", "one"]],
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
    elif line[0] == "doctor" and "--json" in line:
        assert json.loads(out) == {"error": message[0].removeprefix("ladder doctor: "), "reason": "failed"}
    else:
        assert out == "", (argv, out)


def test_a_notebook_of_another_chapter_is_named_as_such(files, capsys):
    assert main(["check", files["01_vector_add.ipynb"]]) == 2
    assert "is chapter 7's notebook (07_reductions), not chapter 1's" in capsys.readouterr().err


@pytest.mark.parametrize("name, value, says", [
    ("LADDER_LOAD_TIMEOUT_S", "600", "LADDER_LOAD_TIMEOUT_S is no longer read: set LADDER_FIRST_CALL_TIMEOUT_S"),
    ("LADDER_CHECKS_AT_ONCE", "0", "LADDER_CHECKS_AT_ONCE='0': at least 1"),
])
def test_ladder_check_names_a_bad_or_renamed_setting_before_any_notebook_runs(monkeypatch, capsys, name, value,
                                                                              says):
    monkeypatch.setenv(name, value)
    assert main(["check", CH1]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ladder check: ") and says in err and "Traceback" not in err, err


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


# Every file and setting an instructor gives `ladder grade` besides the submissions, with a bad value: (the options,
# the environment, what the one line must say). A name in {braces} is a file of the instructor_files fixture.
BAD_INSTRUCTOR_INPUTS = {
    "--bars not TOML": (["--bars", "{not-toml.toml}"], {},
                        "pass-bar file {not-toml.toml} is not valid TOML: Expected '=' after a key in a key/value pair "
                        "(at line 1, column 6)"),
    "--bars, a bar not a number": (["--bars", "{word.toml}"], {},
                                   "pass bar '1a' is not a number: 'fast' ({word.toml})"),
    "--bars, a bar of 0": (["--bars", "{zero.toml}"], {}, "pass bar '1b' must be positive, got 0.0 ({zero.toml})"),
    "--bars, an exercise the course lacks": (["--bars", "{misspelt.toml}"], {},
                                             "pass-bar file {misspelt.toml}: no exercise '1c' in the course"),
    "--bars, an unknown field": (["--bars", "{field.toml}"], {}, "pass bar '1a' has unknown field(s) barr"),
    "--bars, a bad architecture's bar": (["--bars", "{arch.toml}"], {},
                                         "pass bar '5a' is not a number: 'low' ({arch.toml})"),
    "--bars, not an architecture": (["--bars", "{sm.toml}"], {},
                                    "pass bar '5a': 'ampere' in by_arch is not an architecture"),
    "--bars missing": (["--bars", "{folder}/bars.toml"], {}, "--bars {folder}/bars.toml: no such file"),
    "LADDER_BARS not TOML": ([], {"LADDER_BARS": "{not-toml.toml}"}, "pass-bar file {not-toml.toml} is not valid TOML"),
    "LADDER_BARS missing": ([], {"LADDER_BARS": "{folder}/bars.toml"},
                            "LADDER_BARS={folder}/bars.toml does not name a file"),
    "--db not a URL": (["--db", "notaurl"], {}, "--db 'notaurl' is not a database URL"),
    "--db, a database SQLAlchemy lacks": (["--db", "nosuchdb://host/class"], {},
                                          "SQLAlchemy knows no database 'nosuchdb'"),
    "--db, a driver not installed": (["--db", "mysql+mysqldb://host/class"], {},
                                     "--db mysql+mysqldb://host/class: the driver for mysql+mysqldb is not installed"),
    "--db, a folder that is not there": (["--db", "sqlite:///{folder}/nowhere/gradebook.db"], {},
                                         "cannot open the gradebook at sqlite:///{folder}/nowhere/gradebook.db: unable to "
                                         "open database file"),
    "LADDER_CELL_TIMEOUT_S": ([], {"LADDER_CELL_TIMEOUT_S": "soon"}, "LADDER_CELL_TIMEOUT_S='soon' is not a number"),
    "LADDER_FIRST_CALL_TIMEOUT_S": ([], {"LADDER_FIRST_CALL_TIMEOUT_S": "0"}, "LADDER_FIRST_CALL_TIMEOUT_S='0': give a "
                                                                              "positive number of seconds"),
    "LADDER_CALL_TIMEOUT_S": ([], {"LADDER_CALL_TIMEOUT_S": "-1"}, "LADDER_CALL_TIMEOUT_S='-1': give a positive"),
    "LADDER_LOAD_TIMEOUT_S, renamed": ([], {"LADDER_LOAD_TIMEOUT_S": "600"}, "LADDER_LOAD_TIMEOUT_S is no longer "
                                                                           "read: set LADDER_FIRST_CALL_TIMEOUT_S"),
    "LADDER_UNGRADABLE": ([], {"LADDER_UNGRADABLE": "half"}, "LADDER_UNGRADABLE='half': use one of zero, full"),
    "LADDER_UNCHECKED": ([], {"LADDER_UNCHECKED": "some"}, "LADDER_UNCHECKED='some': use one of zero, full"),
    "LADDER_CHECKS_AT_ONCE": ([], {"LADDER_CHECKS_AT_ONCE": "0"}, "LADDER_CHECKS_AT_ONCE='0': at least 1"),
    "LADDER_ISOLATED": ([], {"LADDER_ISOLATED": "yes"}, "LADDER_ISOLATED='yes': use 1"),
    "--cluster-option not YAML": (["--cluster", "slurm", "--cluster-option", "job_extra_directives=['--gres"], {},
                                  "--cluster-option job_extra_directives=['--gres: its value is not YAML"),
}


@pytest.fixture(scope="module")
def instructor_files(files, tmp_path_factory):
    """Bad bars files beside the fixture's files: {name: absolute path}."""
    tmp = tmp_path_factory.mktemp("instructor")
    texts = {"not-toml.toml": "this is = not toml [[[\n", "word.toml": '["1a"]\nbar = "fast"\n',
             "zero.toml": '["1b"]\nbar = 0\n', "misspelt.toml": '["1c"]\nbar = 1.2\n',
             "field.toml": '["1a"]\nbarr = 0.8\n', "arch.toml": '["5a".by_arch.sm_90]\nbar = "low"\n',
             "sm.toml": '["5a".by_arch.ampere]\nbar = 0.5\n'}
    for name, text in texts.items():
        (tmp / name).write_text(text)
    return files | {name: str(tmp / name) for name in texts}


@pytest.mark.parametrize("case", list(BAD_INSTRUCTOR_INPUTS))
def test_every_instructor_input_stops_ladder_grade_before_its_first_student(case, instructor_files, capsys,
                                                                             monkeypatch, tmp_path):
    """A class of two real students; each bad input stops the run with exit code 2 and one line that names the file
    or setting (and, for a file, the parser's line), before anything is graded: no student reaches the grader, no
    grades.csv is written. A bars file that was not TOML graded a whole class, every speed cell 0."""
    from grader.classgrade import task

    options, environ, message = BAD_INSTRUCTOR_INPUTS[case]
    monkeypatch.setenv("LADDER_BARS", "")   # unset again after the test: `--bars` sets it in this process
    for name, value in environ.items():
        monkeypatch.setenv(name, _argv([value], instructor_files)[0])
    graded = []
    monkeypatch.setattr(task, "grade_student", lambda job: graded.append(job.student))
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    workspace = tmp_path / "ws"
    code = main(["grade", instructor_files["two"], "--assignment", "01_vector_add", "--workspace", str(workspace),
                 "--no-progress", *_argv(options, instructor_files)])
    out, err = capsys.readouterr()
    assert code == 2, (case, out[-2000:], err[-2000:])
    assert err.strip().splitlines() == [err.strip()] and "Traceback" not in err, err
    assert err.startswith("ladder grade: ") and _argv([message], instructor_files)[0] in err, err
    assert graded == [] and not (workspace / "grades.csv").exists()


@pytest.fixture(scope="module")
def graded_workspace(tmp_path_factory):
    """A workspace `ladder grade` graded in, with its report: two students whose files are not notebooks (each
    scored 0 with a page, so that nothing is executed), as the gradebook and the report hold any class."""
    import os
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("graded")
    (tmp / "class").mkdir()
    (tmp / "class" / "ann.ipynb").write_text("{}")
    (tmp / "class" / "bob.ipynb").write_text("not a notebook")
    done = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(tmp / "class"), "--assignment",
                           "01_vector_add", "--workspace", str(tmp / "ws"), "--no-progress"], cwd=ROOT,
                          env=dict(os.environ, LADDER_FORCE_NO_GPU="1", LADDER_CACHE_DIR=str(tmp / "cache"),
                                   LADDER_BARS=""),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1 and "class report: " in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    return tmp / "ws"   # exit code 1: students not graded


def test_ladder_report_never_makes_a_gradebook_nor_a_report_from_a_wrong_one(graded_workspace, tmp_path, capsys):
    """`ladder report WS --db URL` where URL is not the class's gradebook: a missing SQLite file, a database with
    no gradebook in it, or another class's gradebook. Each is refused in one line (exit 2); no gradebook file is
    made, and the class's report is left byte for byte as it was (a wrong --db made an empty gradebook and
    replaced the report with "0 student(s) in the gradebook")."""
    import sqlite3

    from nbgrader.api import Gradebook

    from grader.classgrade.journal import Journal

    report = graded_workspace / "report.html"
    before = report.read_bytes()
    not_a_gradebook = tmp_path / "other.db"
    sqlite3.connect(not_a_gradebook).execute("CREATE TABLE notes (line TEXT)")
    other_class = f"sqlite:///{tmp_path / 'other-class.db'}"
    Journal(other_class).close()           # an empty gradebook, as `ladder grade` makes one
    with Gradebook(other_class) as gb:
        gb.update_or_create_student("cy")
    cases = {f"sqlite:///{tmp_path / 'missing.db'}": "no gradebook at sqlite:///",
             f"sqlite:///{not_a_gradebook}": "is not a gradebook `ladder grade` wrote (it has no assignment or "
                                             "ladder_graded table)",
             other_class: f"holds 0 of the 2 students graded in {graded_workspace.resolve()} (not ann, bob)",
             "notaurl": "--db 'notaurl' is not a database URL"}
    for url, message in cases.items():
        assert main(["report", str(graded_workspace), "--db", url]) == 2, url
        out, err = capsys.readouterr()
        assert err.strip().splitlines() == [err.strip()] and message in err and out == "", (url, err)
        assert report.read_bytes() == before
    assert not (tmp_path / "missing.db").exists()
    assert main(["report", str(graded_workspace)]) == 0   # its own gradebook builds it again
    assert capsys.readouterr().out == f"class report: {report.resolve()}\n"
