"""grader/'s layout says how it works, and stays that way: layers that only import downwards, no
import cycle, shallow imports, one seam for the learner's function, one module for settings, and a
README and docs that name what exists."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from conftest import ROOT

GRADER = ROOT / "grader"
MAX_DEPTH = 7


def _modules() -> dict[str, Path]:
    """grader's modules by dotted name."""
    out = {}
    for path in sorted(GRADER.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def test_the_layers_contract_is_kept():
    from importlinter.api import read_configuration
    from importlinter.cli import lint_imports

    assert read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"], "the contract is configured"
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0, "run `lint-imports` to see the import"


def _graph() -> dict[str, set[str]]:
    import grimp

    graph = grimp.build_graph("grader", exclude_type_checking_imports=True)
    return {m: {d for d in graph.find_modules_directly_imported_by(m)} for m in graph.modules if m.startswith("grader")}


def test_no_import_cycle_and_at_most_seven_layers_deep():
    deps = _graph()
    assert set(deps) == set(_modules()), "grimp sees every module"

    @functools.lru_cache(None)
    def depth(module, seen=()):
        assert module not in seen, f"import cycle: {' -> '.join(seen + (module,))}"
        return 1 + max((depth(d, seen + (module,)) for d in deps[module]), default=0)

    deepest = max(deps, key=depth)
    chain = [deepest]
    while deps[chain[-1]]:
        chain.append(max(deps[chain[-1]], key=depth))
    assert depth(deepest) <= MAX_DEPTH, f"imports stack {depth(deepest)} deep: {' -> '.join(chain)}"


def _source_without_docstrings(path: Path) -> str:
    """The module's code with docstrings and comments left out (they may name anything)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    return ast.unparse(tree)


def test_only_the_seam_and_the_isolation_package_know_where_the_learners_function_runs():
    """The seam defines both kinds of LearnerFunction (LocalFunction here, RemoteFunction in grader.isolation) and
    picks one for what a check was handed; nothing else asks which it holds."""
    where = re.compile(r"\b(RemoteFunction|LocalFunction|WorkerHandle|is_remote)\b")
    outside = [name for name, path in _modules().items()
               if not (name.startswith("grader.isolation") or name == "grader.calls.seam")
               and where.search(_source_without_docstrings(path))]
    assert not outside, f"these modules ask which kind of LearnerFunction they hold: {outside}"


def test_every_setting_is_read_in_grader_config():
    read = re.compile(r"""(environ\.get|getenv)\(\s*["']LADDER_|environ\[\s*["']LADDER_\w+["']\s*\](?!\s*=[^=])""")
    readers = [name for name, path in _modules().items()
               if name != "grader.config" and read.search(_source_without_docstrings(path))]
    assert not readers, f"these modules read LADDER_* settings themselves: {readers}"
    from grader import config

    # docs/instructors.md's table lists them (tests/test_settings_table.py); a renamed one is named to be refused.
    known = set(config.VARIABLES) | set(config.RENAMED)
    used = {v for p in GRADER.rglob("*.py") for v in re.findall(r"\bLADDER_[A-Z_]+\b", p.read_text())}
    assert used <= known, f"settings named in grader/ but not in grader.config: {used - known}"


def test_the_readme_layout_names_every_module():
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    missing = []
    for name, path in _modules().items():
        rel = path.relative_to(ROOT).as_posix()
        short = rel.removesuffix("/__init__.py").removesuffix(".py")
        if rel.endswith("__init__.py") and name != "grader.chapters":
            continue  # a package is named by its folder, below
        if re.fullmatch(r"grader\.chapters\.ch\d\d", name):
            continue  # chapters are data: the README names the registry, not each chapter
        if not any(f"`{form}`" in layout for form in (rel, short, Path(short).name)):
            missing.append(rel)
    folders = {p.parent.relative_to(ROOT).as_posix() for p in GRADER.rglob("__init__.py")}
    missing += [f for f in sorted(folders) if f"`{f}/`" not in layout]
    assert not missing, f"the README's layout section does not name: {missing}"


def test_every_doc_the_code_and_readme_cite_exists():
    cited = set()
    for path in [*GRADER.rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        cited |= set(re.findall(r"\bdocs/[\w-]+\.md\b", path.read_text()))
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert cited and not missing, f"cited but missing: {missing}"


def test_every_file_path_the_code_docs_and_tests_name_exists():
    """A module or test named by its path (`grader/notebooks/nbexec.py`) must be there, so that a move
    leaves no stale pointer. `chNN` stands for any chapter. assets/results/ is a record of its day and
    keeps the paths of its day."""
    path_re = re.compile(r"(?<![\w/.-])((?:grader|tests|docs|solutions|course)/[\w./-]*\.(?:py|md|toml|sh))\b")
    texts = [*GRADER.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "tests").rglob("*.md"),
             ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    stale = []
    for path in texts:
        for cited in path_re.findall(path.read_text()):
            pattern = cited.replace("NN", "[0-9][0-9]")
            if not list(ROOT.glob(pattern)):
                stale.append(f"{path.relative_to(ROOT)}: {cited}")
    assert not stale, "paths named but not in the repository:\n" + "\n".join(stale)
