"""Every LADDER_ environment variable the grader reads is in docs/instructors.md's one table of settings, and the
table lists none it does not read: a setting an instructor cannot find, or a row for one that does nothing, fails
here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader import config

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"LADDER_[A-Z0-9_]+")


def _table() -> list[str]:
    """The variables of the table in docs/instructors.md's "Settings" section, in its order."""
    text = (ROOT / "docs" / "instructors.md").read_text()
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `LADDER_")]
    return [NAME.match(row.split("`")[1]).group() for row in rows]


def _named_in_grader() -> set[str]:
    """Every LADDER_ name written anywhere in grader/ (code, messages, comments, data files)."""
    found = set()
    for path in (ROOT / "grader").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".toml", ".j2"):
            found |= set(NAME.findall(path.read_text()))
    return found


def _read_by_config() -> set[str]:
    """The variables grader/config.py reads: the first argument of each reader it calls."""
    source = (ROOT / "grader" / "config.py").read_text()
    return set(re.findall(r'_(?:get|float|at_least_one)\("(LADDER_[A-Z0-9_]+)"', source))


def test_the_table_lists_every_variable_the_grader_reads_once_and_no_other():
    table = _table()
    assert len(table) == len(set(table)), "a variable has two rows"
    assert set(table) == _read_by_config(), "the table and grader/config.py's readers differ"
    assert set(table) == set(config.VARIABLES), "the table and config.VARIABLES (pinned, shipped to workers) differ"
    # A name written elsewhere in grader/ is one of the table's, or a renamed one, kept to be refused by its new name.
    assert _named_in_grader() - set(config.RENAMED) == set(table)


def test_at_most_twelve_variables():
    assert len(_table()) <= 12, _table()


def test_each_renamed_variable_is_refused_naming_its_new_one_and_the_docs_say_so(monkeypatch):
    section = (ROOT / "docs" / "instructors.md").read_text().split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    for old, new in config.RENAMED.items():
        assert f"`{old}` is now `{NAME.match(new).group()}`" in section
        monkeypatch.setenv(old, "600")
        config.unpin()
        with pytest.raises(ValueError, match=f"{old} is no longer read: set {NAME.match(new).group()}"):
            config.check_all()
        monkeypatch.delenv(old)
