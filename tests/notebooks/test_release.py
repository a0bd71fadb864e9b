"""course/ is a fresh nbgrader release of solutions/, its stubs are the friendly kind, and nothing a
learner writes is ever lost to `ladder release`, `ladder start`, `ladder check` or the test suite."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from grader.learner.cells import graded_cells
from grader.notebooks.release import MANIFEST, assignments, release

CH01 = "01_vector_add"
ANSWER = "# MY OWN ANSWER, typed in by a learner"


def test_committed_course_matches_a_fresh_release():
    diffs = release(ROOT, check=True)
    assert not diffs, "course/ is out of date; run `ladder release` and commit:\n" + "\n".join(diffs)


@pytest.fixture
def repo(tmp_path):
    """A copy of what a release reads and writes: solutions/, course/, the figures, the config."""
    copy = tmp_path / "repo"
    for folder in ("solutions", "course", "assets/figures"):
        # as a fresh clone has them: without the checkpoint folders a learner's JupyterLab may have added
        shutil.copytree(ROOT / folder, copy / folder,
                        ignore=shutil.ignore_patterns("*.py", "__pycache__", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "nbgrader_config.py", copy)
    return copy


def _ladder(repo, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "grader.cli", *args], cwd=repo, capture_output=True, text=True,
                          timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _write_answer(nb_path):
    nb = json.loads(nb_path.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "napkin-solution")
    cell["source"] = ANSWER + "\n" + "".join(cell["source"])
    nb_path.write_text(json.dumps(nb, indent=1))


@pytest.mark.slow
def test_release_check_notices_a_hand_edit_and_names_its_folder(repo):
    nb = repo / "course" / CH01 / f"{CH01}.ipynb"
    nb.write_text(nb.read_text().replace("Vector add", "Vector sum", 1))
    diffs = release(repo, [CH01], check=True)
    assert diffs == [f"differs from a fresh release: course/{CH01}/{CH01}.ipynb"]


@pytest.mark.slow
def test_release_check_ignores_jupyter_checkpoints(repo):
    checkpoints = repo / "course" / CH01 / ".ipynb_checkpoints"
    checkpoints.mkdir()
    shutil.copy(repo / "course" / CH01 / f"{CH01}.ipynb", checkpoints / f"{CH01}-checkpoint.ipynb")
    (checkpoints / f"{CH01}-checkpoint.ipynb").write_text("{}")
    assert release(repo, [CH01], check=True) == []


@pytest.mark.slow
def test_a_learners_answer_survives_every_command(repo):
    """`ladder start`, `ladder release --check`, `ladder release` (refuses, then --force with a
    backup), `ladder check` and `ladder start` again: the answer in work/ is never touched, and the
    one typed into course/ by mistake is refused, then kept in a backup.
    About 25 s on 2 cores: five `ladder` commands in a row, one of them a `ladder check` of a notebook."""
    _ladder(repo, "start", "1", "--keep-instructor-tools")
    mine = repo / "work" / CH01 / f"{CH01}.ipynb"
    assert mine.is_file()
    _write_answer(mine)
    released = repo / "course" / CH01 / f"{CH01}.ipynb"
    _write_answer(released)   # and one typed into the release itself
    (released.parent / ".ipynb_checkpoints").mkdir()

    check = _ladder(repo, "release", "--check", CH01, check=False)
    assert check.returncode == 1 and f"course/{CH01}/{CH01}.ipynb" in check.stdout
    refused = _ladder(repo, "release", CH01, check=False)
    assert refused.returncode == 2 and f"course/{CH01}/{CH01}.ipynb" in refused.stderr, refused.stderr
    assert "--force" in refused.stderr
    assert ANSWER in released.read_text(), "a refused release must leave the file as it was"

    _ladder(repo, "check", "--json", str(mine), check=False)   # the notebook runs; nothing is written back
    _ladder(repo, "start", "1", "--keep-instructor-tools")     # a second start keeps the learner's copy
    assert ANSWER in mine.read_text()

    forced = _ladder(repo, "release", "--force", CH01)
    backups = list((repo / ".ladder-backups").rglob(f"{CH01}.ipynb"))
    assert len(backups) == 1 and ANSWER in backups[0].read_text(), forced.stdout
    assert ANSWER not in released.read_text()
    assert (released.parent / ".ipynb_checkpoints").is_dir(), "checkpoint folders are left alone"
    assert release(repo, [CH01], check=True) == []
    assert ANSWER in mine.read_text()


@pytest.mark.slow
def test_release_rewrites_only_what_it_wrote_and_records_it(repo):
    notes = repo / "course" / CH01 / "my-notes.txt"
    notes.write_text("a learner's own file")
    report = release(repo, [CH01])
    assert report.released == [] and report.backed_up == []
    assert notes.read_text() == "a learner's own file", "a file the release never wrote is left alone"
    manifest = json.loads((repo / "course" / MANIFEST).read_text())["files"]
    assert f"{CH01}/{CH01}.ipynb" in manifest and f"{CH01}/my-notes.txt" not in manifest


@pytest.mark.parametrize("name", assignments(ROOT))
def test_released_notebook_hides_tests_and_solutions(name):
    nb = next((ROOT / "course" / name).glob("*.ipynb"))
    text = nb.read_text()
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    source = next((ROOT / "solutions" / name).glob("*.ipynb"))
    assert graded_cells(nb) == graded_cells(source), "graded cells must survive the release unchanged"
    assert sum(c["points"] for c in graded_cells(nb)) > 0


@pytest.mark.parametrize("name", assignments(ROOT))
def test_every_nbgrader_cell_has_a_role_autograde_accepts(name):
    """A cell with nbgrader metadata but no role (not graded, not a solution, not locked, not a task) loses
    its grade_id when nbgrader autogrades it, and autograde then fails on the whole notebook: chapter 4's
    prediction cell did, and every student of that chapter would have scored nothing."""
    source = next((ROOT / "solutions" / name).glob("*.ipynb"))
    roleless = [c["metadata"]["nbgrader"].get("grade_id") for c in json.loads(source.read_text())["cells"]
                if "nbgrader" in c.get("metadata", {})
                and not any(c["metadata"]["nbgrader"].get(k) for k in ("grade", "solution", "locked", "task"))]
    assert not roleless, f"{source.name}: give these cells a role or no nbgrader metadata: {roleless}"


def test_cuda_solution_markers_live_in_c_comments():
    from grader.learner.cells import cuda_sources
    checked = 0
    for nb in (ROOT / "solutions").glob("*/*.ipynb"):
        for name, src in cuda_sources(nb)[0]:
            for line in src.splitlines():
                if "BEGIN SOLUTION" in line or "END SOLUTION" in line:
                    checked += 1
                    assert line.strip().startswith("//"), f"{nb.name} {name}: marker outside a C comment: {line!r}"
    assert checked, "no solution markers found inside CUDA sources"


def test_ladder_check_names_a_missing_chapter_and_how_to_get_it(tmp_path, monkeypatch):
    from grader.cli import resolve_notebook
    from grader.errors import LadderError

    (tmp_path / "solutions").symlink_to(ROOT / "solutions")   # the course's folder, without work/:
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)          # the learner has not run `ladder start`
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LadderError, match=r"chapter 1 \(01_vector_add\) has no copy in .*work: run `ladder start 1`"):
        resolve_notebook("1")
    with pytest.raises(LadderError, match=r"no chapter '99': give a number \(1, 2, 3, 4, 5, 6, 7, 8, .*10\)"):
        resolve_notebook("99")
    with pytest.raises(LadderError, match=r"mine\.ipynb: no such file"):
        resolve_notebook("mine.ipynb")
    mine = tmp_path / "work" / "01_vector_add" / "01_vector_add.ipynb"
    mine.parent.mkdir(parents=True)
    mine.write_text("{}")
    assert resolve_notebook("1") == (Path("work/01_vector_add/01_vector_add.ipynb"), "01_vector_add")
