"""The repository speaks of the course, and its records are filed by subject: no issue numbers, tracker
references, sessions of work or the tools that lent the GPUs in any tracked file, every record under its
subject's folder with a README, and no script in assets/results/ that nothing runs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import ROOT

RESULTS = ROOT / "assets" / "results"
# What a reader without the project's tracker could not follow: "issue 13", "issue-19/", "as the issue asks",
# "this session", "in one device call", "the device tool", "a lent machine", "an earlier stop", "after the fix".
# A record says what was measured, on which GPU and with which command. Each alternative is narrow enough to
# leave the course's own words alone: "the issue" as a tracker item, not the issue slots of a warp scheduler;
# a session of work ("this session", "a GPU session"), not the grader's check sessions or a Jupyter session.
PROCESS_HISTORY = re.compile(
    r"issue[-_ ]?[0-9]+|\bthe issue(?:'s)?\b(?! (?:slots?|rate|width|queue|port|stage|is|was|with)\b)"
    r"|\b(?:earlier|later|next|last|first|this|previous) (?:GPU |H100 |H200 |device |work )?sessions?\b"
    r"|\b(?:GPU|H100|H200|device|work|measuring) sessions?\b|\bsessions? of (?:work|[0-9])|\bsession[-_ ]?[0-9]+\b"
    r"|\b(?:earlier|later|next|last|this|previous) stops?\b|\bdevice[- ](?:call|tool)s?\b|\blent\b"
    r"|\b(?:before|after)[-_ ](?:the[-_ ]|this[-_ ]|a[-_ ])?fix(?:es)?\b|\bcarried wheels?\b|\bwheels? carried\b",
    re.IGNORECASE)
# A word every alternative of PROCESS_HISTORY contains: only a file, then a line, holding one is searched, which keeps
# the scan of every tracked file to about a second (the pattern on every line took 8 s on 2 cores).
PROCESS_WORDS = ("issue", "session", "stop", "device", "lent", "fix", "wheel")
# This file holds the pattern itself.
KNOWS_THE_OLD_NAMES = {"tests/test_records.py"}
SUBJECTS = ("calibration", "class-grading", "exploits", "timing-integrity", "profiles", "notebooks", "consumer-gpus")


def tracked() -> list[str]:
    # git is a CI dependency (the suite runs in a clone): without it this fails, never skips.
    return subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()


def process_history(root: Path, files: list[str]) -> list[str]:
    """Every place among `files` (relative to `root`) whose path or text narrates how the repository was made. A
    path is read with its separators as spaces too, so that `after-the-fix/` and `work_session_2` are caught."""
    found = []
    for rel in files:
        if rel in KNOWS_THE_OLD_NAMES or not (root / rel).is_file():
            continue
        if PROCESS_HISTORY.search(rel) or PROCESS_HISTORY.search(re.sub(r"[-_/.]+", " ", rel)):
            found.append(f"{rel} (its path)")
            continue
        raw = (root / rel).read_bytes()
        if b"\0" in raw:   # a binary file (a figure, an archive) is read by its path alone
            continue
        text = raw.decode("utf-8", errors="replace")
        lowered = text.lower()
        if not any(word in lowered for word in PROCESS_WORDS):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            lowered = line.lower()
            if any(word in lowered for word in PROCESS_WORDS) and PROCESS_HISTORY.search(line):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
    return found


def test_no_tracked_file_names_an_issue_or_a_session():
    found = process_history(ROOT, tracked())
    assert not found, "process history a reader cannot follow:\n" + "\n".join(found[:40])


def test_a_planted_history_is_found_in_paths_and_text(tmp_path):
    """The scan over the repository finds what it is for: planted files, anywhere in a tree, by path and by text,
    and nothing in a file that uses the same words for the course."""
    planted = {
        "notes/issue-58/plan.md": "a plan",                                  # the path names an issue
        "assets/results/x/ch04_tests_after_fix.txt": "4 passed",              # the path narrates a fix
        "src/timing.py": "# measured in this session on an H100\n",
        "guide/intro.md": "Intro.\n\nAs the issue asks, the bar moved.\n",
        "README.md": "Timed in one device call on a lent machine.\n",
        "checks/test_y.py": "# fixed since an earlier stop\n",
        "solutions/01/notes.txt": "wheels carried to the GPU\n",
    }
    clean = {"notes/jupyter.md": "The learner's session object; the grader's check sessions end with the notebook's "
                                "run; a session of its own (setsid); the issue slots of a warp scheduler.\n"}
    for rel, text in {**planted, **clean}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = process_history(tmp_path, sorted([*planted, *clean]))
    assert {line.split(":")[0].removesuffix(" (its path)") for line in found} == set(planted), found
    assert "notes/issue-58/plan.md (its path)" in found and "README.md:1: Timed in one device call on a lent machine." \
        in found


def test_the_pattern_finds_what_it_is_for():
    for text in ("see issue 13", "assets/results/issue99/x.py", "Issue5", "an earlier session", "this session's",
                 "(session of 2026-11-25)", "the next GPU session", "in a later session", "an earlier stop",
                 "issue-19 driver", "results/issue_7/", "as the issue asks", "the issue's timing size",
                 "The issue names", "in one device call", "two device calls", "the device tool's `run`",
                 "device tools", "on a lent nvidia-h200-x4", "was not lent", "Lent for 30 minutes",
                 "in the last work session", "a GPU session", "sessions of work", "session 3 measured",
                 "earlier stops", "after the fix", "before the fixes", "a device-call", "with carried wheels",
                 "the previous sessions"):
        assert PROCESS_HISTORY.search(text), text
    for text in ("the learner's session object", "session = start(chapter=1)", "an issue with the bar",
                 "the same session, without printing", "held by a session", "silent", "excellent", "lentil",
                 "lenticular", "relentless", "the issue slots of a warp scheduler", "reissued", "a device's calls",
                 "device_call(x)", "a device callback", "the device toolkit", "one session a notebook",
                 "four sessions", "a session of its own", "Jupyter sessions", "session_over", "a fixed seed",
                 "the prefix", "bars stop being kept", "the worker's wheels"):
        assert not PROCESS_HISTORY.search(text), text


def test_every_record_is_filed_by_subject_and_every_reference_follows():
    folders = sorted(p.name for p in RESULTS.iterdir() if p.is_dir())
    assert folders == sorted(SUBJECTS), folders
    for folder in [RESULTS, *(RESULTS / s for s in SUBJECTS)]:
        assert (folder / "README.md").is_file(), f"{folder.relative_to(ROOT)} has no README"


def test_every_script_in_the_records_is_run_by_something():
    """A script under assets/results/ is a step of gpu_measure.sh, loaded by a test, or a module such a
    script imports; one nothing runs is an investigation that is over: what it found goes in a README."""
    runners = [RESULTS / "gpu_measure.sh", *(ROOT / "tests").rglob("*.py")]
    # Recorded output that happens to be Python (the code Inductor generated for chapter 8's block) is no script.
    scripts = [p for p in RESULTS.rglob("*") if p.suffix in (".py", ".sh")
               and p.name not in ("gpu_measure.sh", "inductor_code.py")]
    running = "\n".join(r.read_text() for r in runners)
    # Named by its file name, or as chNN_... where one step runs each chapter's script.
    run = {p for p in scripts if p.name in running or re.sub(r"ch\d\d", "chNN", p.name) in running}
    imported = {p for p in scripts if p not in run and any(
        re.search(rf"^\s*from {p.stem} import|^\s*import {p.stem}\b", r.read_text(), re.M) for r in run)}
    idle = sorted(p.relative_to(ROOT).as_posix() for p in set(scripts) - run - imported)
    assert not idle, f"scripts nothing runs: {idle}"


# A figure the text needs from a GPU it was not measured on yet is written as this mark, with what measures it.
TO_BE_MEASURED = "⟨to be measured"


def placeholders() -> list[str]:
    """Everything the course needs measured on a GPU and does not hold yet: provisional bars (grader/bars.toml),
    diagnose cases whose profiles are not recorded, and TO_BE_MEASURED marks in the notebooks, the docs and the
    README."""
    from grader import chapters
    from grader.harness.bars import load_bars
    from grader.profiles.diagnose import cases

    found = [f"grader/bars.toml [{key}]: provisional: {bar.provisional}" for key, bar in load_bars(None).items()
             if bar.provisional]
    for name in chapters.names():
        for case in cases(getattr(chapters.module(name), "DIAGNOSE", ())):
            if not case.recorded:
                found.append(f"{name}.DIAGNOSE {case.key}: no profiles of {case.exercise} ({case.rung}, "
                             f"{case.beside}) in assets/profiles/{case.folder}/")
    texts = [*(ROOT / "solutions").glob("*/*.ipynb"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    for path in texts:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if TO_BE_MEASURED in line:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:160]}")
    return found


def test_nothing_waiting_for_a_gpu_measurement_ships():
    """A new chapter is written before its GPU figures exist; this test keeps it from shipping until they do. Each
    line names what is missing and the step of assets/results/gpu_measure.sh that measures it."""
    missing = placeholders()
    assert not missing, "measure these on a GPU before the course ships:\n" + "\n".join(missing)


def test_the_placeholder_finder_finds_each_kind(tmp_path, monkeypatch):
    override = tmp_path / "bars.toml"
    override.write_text('["1a"]\nprovisional = "not calibrated"\n')
    monkeypatch.setenv("LADDER_BARS", str(override))
    assert any(line.startswith("grader/bars.toml [1a]: provisional") for line in placeholders())
