"""The Colab setup cell: first in every released notebook, a no-op anywhere but Colab, on Colab an
install that only adds (the course without its dependencies, then what is missing, nothing installed
replaced), with pip commands that pip's resolver accepts offline; and the README's Colab links all
built from the one repository address."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from grader.learner.cells import meta
from grader.notebooks import colab
from grader.notebooks.course import assignments

RELEASED = sorted((ROOT / "course").glob("*/*.ipynb"))

# Runs the cell in a fresh interpreter with every way of starting a process replaced by a recorder:
# whatever the cell runs is recorded, nothing is run. SPY_HIDE names distributions to pretend missing.
SPY = textwrap.dedent("""\
    import atexit, json, os, subprocess, sys
    import importlib.metadata as md

    calls = []

    def fake_run(args, *a, **kw):
        call = {"args": [str(x) for x in args]}
        if "--constraint" in call["args"]:
            call["constraints"] = open(call["args"][call["args"].index("--constraint") + 1]).read().split()
        calls.append(call)
        return subprocess.CompletedProcess(args, 0, "", "")

    class RefusedPopen(subprocess.Popen):
        def __init__(self, args, *a, **kw):
            calls.append({"args": [str(x) for x in args], "popen": True})
            raise OSError("the spy starts no process")

    subprocess.run = fake_run
    subprocess.Popen = RefusedPopen
    os.system = lambda command: calls.append({"args": [command]}) or 1
    for name in ("execv", "execve", "execvp", "posix_spawn", "posix_spawnp", "fork"):
        if hasattr(os, name):
            setattr(os, name, lambda *a, _name=name, **kw: calls.append({"args": [_name]}))

    hidden = set(filter(None, os.environ.get("SPY_HIDE", "").split(",")))
    real_version, real_distributions = md.version, md.distributions
    def version(name):
        if name in hidden:
            raise md.PackageNotFoundError(name)
        return real_version(name)
    md.version = version
    md.distributions = lambda **kw: [d for d in real_distributions(**kw) if d.metadata["Name"] not in hidden]

    atexit.register(lambda: json.dump({"calls": calls, "pip imported": "pip" in sys.modules},
                                      open(os.environ["SPY_LOG"], "w")))
    exec(compile(open(sys.argv[1]).read(), "colab-setup", "exec"), {"__name__": "__main__"})
    """)


def run_cell(tmp_path, env_extra=None, hide=()):
    (tmp_path / "spy.py").write_text(SPY)
    (tmp_path / "cell.py").write_text(colab.setup_cell_source())
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLAB_")}
    env.update({"SPY_LOG": str(tmp_path / "spy.json"), "SPY_HIDE": ",".join(hide), "PYTHONPATH": str(ROOT),
                **(env_extra or {})})
    proc = subprocess.run([sys.executable, str(tmp_path / "spy.py"), str(tmp_path / "cell.py")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((tmp_path / "spy.json").read_text())


def test_setup_cell_does_nothing_outside_colab(tmp_path):
    proc, spy = run_cell(tmp_path)
    assert spy["calls"] == [], "outside Colab the cell must start no process"
    assert not spy["pip imported"]
    assert proc.stdout == "" and proc.stderr == "", "outside Colab the cell prints nothing"


def test_on_colab_the_cell_installs_the_course_without_deps_then_only_what_is_missing(tmp_path):
    """Colab is recognised by its environment; the course (pretended missing) is installed without
    dependencies, then its missing requirement (nbval, pretended missing) with everything installed
    pinned, torch included."""
    import torch

    proc, spy = run_cell(tmp_path, {"COLAB_RELEASE_TAG": "release-colab_test"}, hide=("kernel-ladder", "nbval"))
    course, requirements = spy["calls"]
    assert course["args"] == [sys.executable, "-m", "pip", *colab.course_install_args()]
    assert "--no-deps" in course["args"]
    (nbval,) = [r for r in colab.course_requirements() if r.startswith("nbval")]   # as the course declares it
    assert requirements["args"][:4] == [sys.executable, "-m", "pip", "install"]
    assert [a for a in requirements["args"] if a.startswith("nbval")] == [nbval], requirements["args"]
    assert not any(a.startswith(("torch", "triton", "cupy")) for a in requirements["args"])
    assert f"torch=={torch.__version__}" in requirements["constraints"], "Colab's torch must stay as it is"
    assert f"Kernel Ladder is installed. Added: {nbval}." in proc.stdout
    assert proc.stderr == ""


def test_plan_adds_what_is_missing_and_keeps_what_the_runtime_has():
    requirements = ["torch>=2.4,<2.5", "triton>=3.0; platform_system == 'Linux'", "nbgrader>=0.9.2,<0.10",
                    "ipykernel>=6.29", "numpy>=1.26", "pytest>=8.0; extra == 'dev'", "nbval>=0.11"]
    colab_like = {"torch": "2.6.0+cu124", "triton": "3.2.0", "ipykernel": "6.17.1", "numpy": "2.0.2",
                  "google-colab": "1.0.0", "weird": "not-a-version", "kernel-ladder": "0.1.0"}
    plan = colab.plan_install(requirements, colab_like)
    assert plan.missing == ["nbgrader<0.10,>=0.9.2", "nbval>=0.11"]
    assert plan.kept == [("torch", "2.6.0+cu124", "<2.5,>=2.4"), ("ipykernel", "6.17.1", ">=6.29")]
    pins = colab.constraints(colab_like)
    assert "torch==2.6.0+cu124" in pins and "ipykernel==6.17.1" in pins
    assert not any(p.startswith(("weird", "kernel-ladder")) for p in pins)


def test_install_goes_one_requirement_at_a_time_when_pip_cannot_resolve_them_together():
    calls, lines = [], []

    def pip(args, **kw):
        reqs = [a for a in args[args.index("--constraint") + 2:]]
        calls.append(reqs)
        ok = len(reqs) == 1 and not reqs[0].startswith("nbgrader")
        return subprocess.CompletedProcess(args, 0 if ok else 1, "", "")

    plan = colab.install_requirements(["nbgrader>=0.9.2", "nbval>=0.11", "torch>=2.4"], {"torch": "2.6.0"},
                                      run=pip, echo=lines.append)
    assert calls == [["nbgrader>=0.9.2", "nbval>=0.11"], ["nbgrader>=0.9.2"], ["nbval>=0.11"]]
    assert plan.missing == ["nbgrader>=0.9.2", "nbval>=0.11"]
    assert lines[0] == "Kernel Ladder is installed. Added: nbval>=0.11."
    assert "nbgrader>=0.9.2" in lines[-1] and "without replacing" in lines[-1]


# ------------------------------------------------------------------------- pip's resolver, offline

def pip_dry_run(tmp_path, *args):
    version = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if version.returncode:
        pytest.skip(f"pip is not available to {sys.executable}")
    if tuple(int(x) for x in re.findall(r"\d+", version.stdout)[:2]) < (22, 2):
        pytest.skip(f"pip {version.stdout.split()[1]} has no --dry-run --report (22.2 and later)")
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet",
                           "--report", str(report), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [(item["metadata"]["name"], item["metadata"]["version"]) for item in json.loads(report.read_text())["install"]]


def test_the_course_install_resolves_offline_to_the_course_alone(tmp_path):
    """The cell's own pip arguments, with the git address swapped for a copy of this checkout:
    pip builds the course's metadata offline and would install that one distribution, nothing else."""
    project = tmp_path / "kernel-ladder"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project)
    shutil.copytree(ROOT / "grader", project / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    from importlib.metadata import version
    if int(version("setuptools").split(".")[0]) < 77:   # pyproject's build requirement; offline, pip uses this one
        pytest.skip(f"setuptools {version('setuptools')} is older than the 77 the course builds with")
    *flags, requirement = colab.course_install_args()
    assert requirement == f"kernel-ladder @ git+{colab.REPOSITORY}@{colab.BRANCH}"
    local = requirement.replace(f"git+{colab.REPOSITORY}@{colab.BRANCH}", project.as_uri())
    installed = pip_dry_run(tmp_path, "--no-build-isolation", *flags[1:], local)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert installed == [("kernel-ladder", version)]


def test_the_requirements_install_resolves_offline_against_what_is_installed(tmp_path):
    """The second step's pip arguments for the course's requirements, constraints pinning every
    installed distribution: pip accepts the constraints and replaces nothing (here everything is
    installed already, so it installs nothing at all)."""
    requirements = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    installed = colab.installed_versions()
    plan = colab.plan_install(requirements, installed)
    assert plan.missing == [], f"this environment lacks {plan.missing}: install the course first"
    pins = tmp_path / "keep-installed.txt"
    pins.write_text("\n".join(colab.constraints(installed)) + "\n")
    args = colab.pip_install_args(requirements, pins)   # pip evaluates their markers itself
    assert args[:2] == ["install", "--quiet"]
    assert pip_dry_run(tmp_path, *args[2:]) == []


# ------------------------------------------------------------------------- the release and the README

@pytest.mark.parametrize("nb", RELEASED, ids=lambda p: p.parent.name)
def test_every_released_notebook_opens_with_the_setup_cell(nb):
    cells = json.loads(nb.read_text())["cells"]
    first = cells[0]
    assert first["id"] == colab.CELL_ID and first["cell_type"] == "code"
    assert "".join(first["source"]) == colab.setup_cell_source(), "course/ is out of date: run `ladder release`"
    assert meta(first) == {}, "the setup cell carries no nbgrader metadata: it is neither graded nor locked"
    assert [c for c in cells if c.get("id") == colab.CELL_ID] == [first]
    source = ROOT / "solutions" / nb.parent.name / nb.name
    assert colab.CELL_ID not in [c.get("id") for c in json.loads(source.read_text())["cells"]], \
        "the setup cell belongs to the release only"


def test_the_readme_links_every_chapter_to_colab_at_the_one_address():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"https://colab\.research\.google\.com/github/[^\s)\"'>]+", text)
    expected = [colab.colab_url(f"course/{name}/{name}.ipynb") for name in assignments(ROOT)]
    assert sorted(set(links)) == sorted(expected), "README's Colab links must be built from colab.REPOSITORY"
    prefix = colab.colab_url("")
    for link in links:
        assert (ROOT / link.removeprefix(prefix)).is_file(), f"{link} names no notebook of this checkout"
