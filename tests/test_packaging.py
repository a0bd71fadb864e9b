"""The install story: pyproject, environment.yml, README and CI agree."""

import re
import tomllib

import yaml

from conftest import ROOT


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_pip_section_matches_pyproject():
    deps = _pyproject()["project"]["dependencies"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pip = [p for p in pip if not p.startswith("-e")]
    assert sorted(pip) == sorted(deps), (
        "environment.yml's pip section and pyproject.toml's dependencies differ:\n"
        f"  only in environment.yml: {sorted(set(pip) - set(deps))}\n"
        f"  only in pyproject.toml: {sorted(set(deps) - set(pip))}")
    names = [d if isinstance(d, str) else "pip:" for d in env["dependencies"]]
    assert any(n.startswith("python") for n in names) and "pip" in names


def test_design_card_packages_are_dependencies():
    deps = " ".join(_pyproject()["project"]["dependencies"])
    for package in ("jupyterlab", "nbgrader", "torch", "triton", "cupy-cuda12x", "matplotlib", "nbval"):
        assert re.search(rf"(^|\s|\"){re.escape(package)}\b", deps), f"{package} missing from dependencies"


def test_build_backend_is_available_offline():
    # GPU images ship setuptools; anything else would break `pip install --no-build-isolation -e .` offline.
    assert _pyproject()["build-system"]["build-backend"] == "setuptools.build_meta"


def _readme_block_after(heading_word: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"#+ [^\n]*{heading_word}[^\n]*\n(.*?)```(?:bash|sh)?\n(.*?)```", text, re.S | re.I)
    assert m, f"README has no code block under a heading with '{heading_word}'"
    return m.group(2).strip()


def test_ci_runs_the_readme_test_command():
    test_command = _readme_block_after("Test")
    ci = (ROOT / ".ci" / "run").read_text()
    for line in test_command.splitlines():
        assert line.strip() in ci, f"the README's test command `{line}` is not in .ci/run"
    assert "torch==2.13.0" in ci, ".ci/run must install the CPU build of torch before the project"


def test_readme_has_setup_command():
    assert 'pip install -e ".[dev]"' in _readme_block_after("Set up")
