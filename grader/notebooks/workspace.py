"""`ladder start`: a learner's own copy of the course, and a JupyterLab without the instructor's tools.

Learners write their answers in work/, never in course/. course/ is the release: `ladder release`
regenerates it, `git pull` updates it, and the test suite compares it with solutions/. `ladder
start` copies each chapter's released notebook into work/ (the way nbgrader's fetch gives every
student a copy), and never overwrites a file that is already there, so running it again after an
update only adds what is new.

nbgrader's JupyterLab extension shows an "Nbgrader" menu, a "Create Assignment" toolbar and the
formgrader to everyone who has nbgrader installed, and the course depends on nbgrader. `ladder lab
--learner` (which `ladder start` runs) turns the extension and its server parts off for this Python
environment with JupyterLab's own commands; `ladder lab --instructor` turns them back on.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LadderError
from .course import RELEASE_DIR, chapter_names
from .release import released_files

WORK_DIR = "work"

# nbgrader's JupyterLab extension (menu, create-assignment toolbar, formgrader, assignment and course
# lists, validate button) and the server extensions behind it.
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"
NBGRADER_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.assignment_list",
                              "nbgrader.server_extensions.course_list",
                              "nbgrader.server_extensions.validate_assignment")


@dataclass
class Started:
    copied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)        # already there, different from the release: theirs
    unchanged: list[str] = field(default_factory=list)   # already there, identical to the release


def start(root: Path, dest: Path, chapters: list[str] | None = None) -> Started:
    """Copy the released notebooks of `chapters` from course/ into dest/, never overwriting."""
    result = Started()
    for name in chapter_names(root, chapters):
        for rel, src in released_files(root / RELEASE_DIR / name).items():
            target = dest / name / rel
            shown = str(target.relative_to(dest.parent)) if target.is_relative_to(dest.parent) else str(target)
            if target.exists():
                (result.unchanged if target.read_bytes() == src.read_bytes() else result.kept).append(shown)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            result.copied.append(shown)
    return result


def _config_dir(level: str) -> str:
    from jupyter_core.paths import ENV_CONFIG_PATH, jupyter_config_dir

    if level == "sys_prefix":
        return ENV_CONFIG_PATH[0]   # {sys.prefix}/etc/jupyter: this Python environment only
    if level == "user":
        return jupyter_config_dir()
    raise LadderError(f"unknown level {level!r}: sys_prefix or user")


def set_instructor_tools(enabled: bool, level: str = "sys_prefix") -> list[str]:
    """Show or hide nbgrader's JupyterLab extension and server extensions at `level` ("sys_prefix":
    this Python environment; "user": ~/.jupyter). Returns what was done, one line each.

    Through JupyterLab's and Jupyter Server's own APIs, the ones `jupyter labextension disable` uses.
    Not `jupyter server extension disable --user`: it refuses extensions enabled at another level
    (nbgrader enables its own in the environment) and still exits 0."""
    from jupyter_server.config_manager import BaseJSONConfigManager
    from jupyterlab_server.config import get_static_page_config, write_page_config

    folder = _config_dir(level)
    # labconfig/page_config.json at this level: hiding lists the extension under disabledExtensions;
    # showing removes that entry (not `jupyter labextension enable`, which also locks it there).
    page = get_static_page_config(level=level)
    disabled = page.setdefault("disabledExtensions", {})
    if enabled:
        disabled.pop(NBGRADER_LAB_EXTENSION, None)
    else:
        disabled[NBGRADER_LAB_EXTENSION] = True
    write_page_config(page, level=level)
    # Hiding writes False for each; showing removes those entries again (None deletes a key), so
    # nbgrader's own settings apply.
    value = None if enabled else False
    BaseJSONConfigManager(config_dir=folder).update(
        "jupyter_server_config", {"ServerApp": {"jpserver_extensions": {n: value for n in NBGRADER_SERVER_EXTENSIONS}}})
    verb = "enabled" if enabled else "disabled"
    return [f"JupyterLab extension {NBGRADER_LAB_EXTENSION}: {verb} ({folder}/labconfig/page_config.json)",
            f"server extensions {', '.join(NBGRADER_SERVER_EXTENSIONS)}: {verb} ({folder}/jupyter_server_config.json)"]
