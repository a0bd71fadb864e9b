"""The chapters, found in one place: every module named `chNN` in this package is a chapter.

Each chapter module holds its exercises as data (`EXERCISES`: sizes, tolerances, reference, baseline,
the extra checks it needs), `BAR_KEYS` (every pass-bar key it uses, mapped to its exercise key),
`SANITIZE` (what `ladder check --sanitize` runs), the `check_*` functions its notebook's test cells
call, and its teaching helpers. Adding a chapter adds its module, its bars in bars.toml, its notebooks
and its tests: the worker, the verifier, the sanitizer and the test suite find it here.

Chapter modules are imported by name, when asked for: this package imports none of them itself.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import tomllib
from functools import cache
from importlib import resources
from types import ModuleType

GRADING_FIELDS = {"checks_at_once": int}
# Fields of grading.toml that were renamed: the old name is refused with the new one.
RENAMED_FIELDS = {"check_sessions": "checks_at_once"}


def names() -> list[str]:
    """"ch01", "ch02", ...: every chapter module, in order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if re.fullmatch(r"ch\d\d", m.name))


def module(name: str) -> ModuleType:
    if name not in names():
        raise KeyError(f"no chapter {name!r}; there are {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


def chapter_modules() -> list[ModuleType]:
    return [module(name) for name in names()]


def all_exercises() -> dict:
    """Every exercise of every chapter, keyed as in bars.toml."""
    found: dict = {}
    for mod in chapter_modules():
        for ex in mod.EXERCISES:
            if ex.key in found:
                raise ValueError(f"exercise key {ex.key!r} defined twice")
            found[ex.key] = ex
    return found


def all_bar_keys() -> dict[str, str]:
    """Every pass-bar key a chapter uses, mapped to its exercise key."""
    keys: dict[str, str] = {}
    for mod in chapter_modules():
        keys.update(mod.BAR_KEYS)
    return keys


@cache
def grading() -> dict[str, dict]:
    """chNN (or "default") -> how its notebooks are graded (grading.toml), read without importing any chapter
    module."""
    table = tomllib.loads(resources.files(__name__).joinpath("grading.toml").read_text())
    known = names()
    for chapter, fields in table.items():
        if chapter not in known and chapter != "default":
            raise ValueError(f"grader/chapters/grading.toml: [{chapter}] is no chapter; there are {', '.join(known)} "
                             "and [default]")
        for field, value in fields.items():
            if field in RENAMED_FIELDS:
                raise ValueError(f"grader/chapters/grading.toml: [{chapter}] {field} is now called "
                                 f"{RENAMED_FIELDS[field]}")
            wanted = GRADING_FIELDS.get(field)
            if wanted is None or type(value) is not wanted or value < 1:
                raise ValueError(f"grader/chapters/grading.toml: [{chapter}] {field} = {value!r}: the fields are "
                                 + ", ".join(f"{f} (a whole number, at least 1)" for f in GRADING_FIELDS))
    missing = set(GRADING_FIELDS) - set(table.get("default", {}))
    if missing:
        raise ValueError(f"grader/chapters/grading.toml: [default] needs {', '.join(sorted(missing))}")
    return table


def checks_at_once(chapter: str | None) -> int:
    """How many of a notebook's graded checks run at once, each in a session of its own, as `chapter` says (a
    chapter that says nothing, or a notebook of none: grading.toml's [default])."""
    table = grading()
    return table.get(chapter or "", {}).get("checks_at_once", table["default"]["checks_at_once"])
