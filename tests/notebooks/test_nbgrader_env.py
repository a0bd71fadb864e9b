"""nbgrader runs the `alembic` command to set up every new gradebook (a worker's scratch course makes one
for its first student), so `nbgrader_env` must make it reachable whatever PATH the process was given."""

import os
import shutil
import stat
from importlib import metadata

import pytest

from grader.notebooks import course


def test_alembic_is_found_with_a_path_that_lacks_the_environments_bin_folder(monkeypatch):
    pytest.importorskip("alembic")
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", "/bin"]))
    course.nbgrader_env()
    assert shutil.which("alembic"), os.environ["PATH"]


def test_a_pip_target_install_puts_its_bin_folder_on_path(tmp_path, monkeypatch):
    """`pip install --target DIR` writes commands to DIR/bin, while the package's record names them
    relative to another prefix (../../bin/alembic), which does not exist here."""
    (tmp_path / "alembic").mkdir()
    (tmp_path / "bin").mkdir()
    command = tmp_path / "bin" / "alembic"
    command.write_text("#!/bin/sh\necho head\n")
    command.chmod(command.stat().st_mode | stat.S_IEXEC)

    class TargetInstall:
        files = [metadata.PackagePath("../../bin/alembic"), metadata.PackagePath("alembic/__init__.py")]

        def locate_file(self, path):
            return tmp_path / "site" / ".." / str(path) if str(path).startswith("..") else tmp_path / str(path)

    monkeypatch.setattr(metadata, "distribution", lambda name: TargetInstall())
    monkeypatch.setenv("PATH", "/nowhere")
    course.nbgrader_env()
    path = os.environ["PATH"].split(os.pathsep)
    assert str(tmp_path / "bin") in path and path[-1] == "/nowhere"
    assert str(tmp_path / "site" / ".." / ".." / "bin") not in path   # the record's own, absent folder


def test_a_missing_alembic_command_is_named_when_a_gradebook_cannot_be_made(tmp_path, monkeypatch):
    from grader.classgrade import course as grading_course
    from grader.errors import LadderError

    class NoAlembic:
        def generate_assignment(self, *args, **kwargs):
            return {"success": False, "error": "Traceback ...",
                    "log": "FileNotFoundError: [Errno 2] No such file or directory: 'alembic'"}

    monkeypatch.setattr(grading_course, "api", lambda *args, **kwargs: NoAlembic())
    with pytest.raises(LadderError, match="runs the `alembic` command to create a new gradebook"):
        grading_course.generate(tmp_path, "01_vector_add", {"01_vector_add.ipynb": b"{}"})


def test_a_new_gradebook_gets_the_version_alembic_s_command_gives_without_starting_it(tmp_path, monkeypatch):
    import subprocess

    import nbgrader.api
    from nbgrader.dbutil import _temp_alembic_ini

    course.nbgrader_env()
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:   # what nbgrader's own function asked
        command = subprocess.check_output(["alembic", "-c", ini, "heads"]).decode().split("\n")[0].split(" ")[0]

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "check_output", no_process)
    monkeypatch.setattr(nbgrader.api.sp, "check_output", no_process)
    assert nbgrader.api.get_alembic_version() == command and len(command) == 12
    with nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as book:
        stamped = book.db.execute(nbgrader.api.text("SELECT version_num FROM alembic_version")).scalar()
    assert stamped == command
