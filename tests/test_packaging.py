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
    assert ci.index("torch==2.13.0") < ci.index('-e ".[dev]"')


def _commands(text: str) -> list[str]:
    """Shell commands, normalised the way .ci/run writes them (`python -m pip`, --quiet, output dropped, one
    command a line where the README joins two with &&)."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.strip().startswith("#") else ""
        for command in line.split(" && "):
            command = re.sub(r"^python -m pip ", "pip ", command.strip())
            command = re.sub(r"\s+--quiet\b|\s*>/dev/null$", "", command)
            if command:
                out.append(command)
    return out


VENV = ["python3 -m venv .venv", ". .venv/bin/activate"]


def _setup_install_steps() -> list[str]:
    """The install commands of the README's set-up, in reading order (the virtual environment, steps 1 and 2)."""
    text = (ROOT / "README.md").read_text()
    setup = text[text.index("## Set up"):text.index("**3.")]
    blocks = re.findall(r"```bash\n(.*?)```", setup, re.S)
    return [c for block in blocks for c in _commands(block)]


def test_readme_setup_puts_the_cpu_torch_before_the_install():
    steps = _setup_install_steps()
    assert steps[:2] == VENV, "the set-up starts by making and activating a virtual environment"
    assert steps[2].startswith('pip install "torch==') and "download.pytorch.org/whl/cpu" in steps[2]
    assert steps[3] == 'pip install -e ".[dev]"'


def test_ci_runs_the_readme_setup_in_its_order():
    ci = [c for c in _commands((ROOT / ".ci" / "run").read_text())
          if c.startswith(("pip install", "python -m")) or c in VENV]
    ci = [c for c in ci if "--upgrade pip" not in c]
    assert ci == _setup_install_steps(), f".ci/run installs {ci}, the README says {_setup_install_steps()}"


def test_license_is_an_spdx_string_with_its_file():
    project = _pyproject()["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").is_file()


def test_packages_whose_private_api_the_executor_uses_are_capped():
    """nbexec subclasses nbgrader's and nbclient's executors and calls their private methods: a new
    release may move them, so both carry an upper bound, in pyproject.toml and environment.yml alike."""
    source = (ROOT / "grader" / "notebooks" / "nbexec.py").read_text()
    assert "from nbclient" in source and "from nbgrader" in source
    assert re.search(r"super\(\)\._\w+", source), "nbexec calls a private method of its base class"
    deps = _pyproject()["project"]["dependencies"]
    for package in ("nbgrader", "nbclient"):
        spec = next(d for d in deps if re.match(rf"{package}\b", d))
        assert "<" in spec, f"{spec}: give {package} an upper bound"


def test_every_readme_section_named_in_the_code_exists():
    """A pointer such as `(README, "Set up": ...)` in pyproject.toml, environment.yml or grader/ names a section
    the README has (pyproject.toml pointed to a "CuPy and your CUDA version" that was never there)."""
    headings = {line.lstrip("#").strip() for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("## ")}
    files = [ROOT / "pyproject.toml", ROOT / "environment.yml", *sorted((ROOT / "grader").rglob("*.py"))]
    named = {(path.relative_to(ROOT).as_posix(), m.group(1)) for path in files
             for m in re.finditer(r'README(?:\.md)?[:,]\s*"([^"]+)"', path.read_text())}
    assert named, "no README section is named anywhere: the pattern no longer matches how the code names them"
    missing = sorted((path, name) for path, name in named if name not in headings)
    assert not missing, f"README sections that do not exist: {missing} (its sections: {sorted(headings)})"
