"""Google Colab: the repository address, the setup cell `ladder release` puts first in every released
notebook, and the install that cell runs on Colab.

A notebook opened on Colab comes straight from GitHub, with nothing of the course installed. Its
first cell installs the course there and does nothing anywhere else. The Colab runtime already has
a CUDA build of torch, with Triton and CuPy, and runs its own Jupyter server on package versions it
pins; replacing any of them costs gigabytes of downloads or a broken runtime. So the install only
adds: the course itself without its dependencies, then those of its requirements that are not
installed at all, with every installed distribution pinned to its version as a constraint. A
requirement that pip cannot add without replacing something is left out and named.

`REPOSITORY` is the one place the course's address is written: the setup cell and the README's "Open
in Colab" links are built from it (tests/notebooks/test_colab.py checks the links).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = "https://github.com/kernel-ladder/kernel-ladder"
BRANCH = "main"
DISTRIBUTION = "kernel-ladder"
CELL_ID = "colab-setup"


def course_requirement() -> str:
    """What pip installs the course from on Colab: the branch the Colab links open."""
    return f"{DISTRIBUTION} @ git+{REPOSITORY}@{BRANCH}"


def course_install_args() -> list[str]:
    """pip's arguments for installing the course itself. --no-deps: its requirements are added by
    `install_requirements`, which never replaces what the runtime has."""
    return ["install", "--quiet", "--no-deps", course_requirement()]


def colab_url(release_path: str) -> str:
    """Colab's address for a file of the repository, e.g. course/01_vector_add/01_vector_add.ipynb."""
    owner_and_name = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_and_name}/blob/{BRANCH}/{release_path}"


# ------------------------------------------------------------------------------- the setup cell

def setup_cell_source() -> str:
    # Plain Python (no `!pip` line), so that the cell runs the same in a kernel and in the tests,
    # which execute it outside IPython. Detection reads what Colab sets up before any cell runs
    # (its kernel imports google.colab; its runtime exports COLAB_RELEASE_TAG) and imports nothing.
    *flags, requirement = course_install_args()
    pip = ", ".join(["sys.executable", '"-m"', '"pip"', *(f'"{f}"' for f in flags), "course"])
    return f"""\
# Google Colab only: run this cell first. It installs the course from
# {REPOSITORY} and keeps Colab's own torch, Triton and CuPy.
# Anywhere else it does nothing.
import os, sys

if "COLAB_RELEASE_TAG" in os.environ or "google.colab" in sys.modules:
    import importlib, importlib.metadata, subprocess
    try:
        importlib.metadata.version("{DISTRIBUTION}")
    except importlib.metadata.PackageNotFoundError:
        course = "{requirement}"
        pip = subprocess.run([{pip}],
                             capture_output=True, text=True)
        if pip.returncode:
            raise RuntimeError("pip could not install the course:\\n" + pip.stderr)
        importlib.invalidate_caches()
    from grader.notebooks.colab import install_requirements
    install_requirements()"""


def add_setup_cell(path: Path) -> None:
    """Make the setup cell the first cell of the notebook at `path` (replacing an older copy of it).

    It carries no nbgrader metadata: nbgrader neither grades nor restores it, and the grader's
    checks, which rebuild a learner's work from the setup and solution cells, never run it."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]
    nb.cells.insert(0, nbformat.v4.new_code_cell(setup_cell_source(), id=CELL_ID))
    path.write_text(nbformat.writes(nb) + "\n")   # the layout nbgrader writes, so the rest is unchanged


# ------------------------------------------------------------------------------- on Colab

@dataclass
class InstallPlan:
    missing: list[str] = field(default_factory=list)   # requirements not installed at all: pip adds these
    kept: list[tuple[str, str, str]] = field(default_factory=list)   # (name, installed, wanted): left as they are


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def course_requirements() -> list[str]:
    """The course's requirements, as the installed course declares them (pyproject.toml's list)."""
    import importlib.metadata

    return list(importlib.metadata.requires(DISTRIBUTION) or [])


def installed_versions() -> dict[str, str]:
    import importlib.metadata

    found = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(_name(name), dist.version)   # the first on sys.path is the one imported
    return found


def plan_install(requirements: list[str], installed: dict[str, str]) -> InstallPlan:
    """Which requirements pip must add: those that apply here (markers) and are not installed. An
    installed distribution outside the requirement's range is kept, never replaced."""
    from packaging.requirements import Requirement

    plan = InstallPlan()
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue   # another platform's, or an extra's (dev, docs)
        have = installed.get(_name(req.name))
        if have is None:
            req.marker = None
            plan.missing.append(str(req))
        elif not req.specifier.contains(have, prereleases=True):
            plan.kept.append((req.name, have, str(req.specifier)))
    return plan


def constraints(installed: dict[str, str]) -> list[str]:
    """A pip constraint per installed distribution, at its installed version: resolving against
    them, pip can add packages but never upgrade, downgrade or replace one."""
    from packaging.version import InvalidVersion, Version

    pins = []
    for name, version in sorted(installed.items()):
        try:
            Version(version)
        except InvalidVersion:
            continue   # pip could not read the pin; such a distribution is left to pip's own care
        if name != DISTRIBUTION:
            pins.append(f"{name}=={version}")
    return pins


def pip_install_args(requirements: list[str], constraints_file: Path) -> list[str]:
    return ["install", "--quiet", "--constraint", str(constraints_file), *requirements]


def install_requirements(requirements: list[str] | None = None, installed: dict[str, str] | None = None,
                         run=subprocess.run, echo=print) -> InstallPlan:
    """Add the course's missing requirements, all in one pip run, or one at a time when pip cannot
    resolve them together. Prints what it installed, kept and left out."""
    requirements = course_requirements() if requirements is None else requirements
    installed = installed_versions() if installed is None else installed
    plan = plan_install(requirements, installed)
    left_out = []
    if plan.missing:
        with tempfile.TemporaryDirectory() as tmp:
            pins = Path(tmp) / "keep-installed.txt"
            pins.write_text("\n".join(constraints(installed)) + "\n")

            def pip(reqs):
                return run([sys.executable, "-m", "pip", *pip_install_args(reqs, pins)],
                           capture_output=True, text=True).returncode == 0

            if not pip(plan.missing):
                left_out = [req for req in plan.missing if not pip([req])]
    added = [req for req in plan.missing if req not in left_out]
    echo(f"Kernel Ladder is installed. Added: {', '.join(added) or 'nothing (all there)'}.")
    if plan.kept:
        echo("Kept Colab's own: " + ", ".join(f"{n} {have} (the course asks for {want})" for n, have, want in plan.kept)
             + ". If a chapter misbehaves, `!ladder doctor` says what these versions allow.")
    if left_out:
        echo("Not installed, because pip could not add them without replacing packages Colab has: "
             + ", ".join(left_out) + ".")
    return plan

