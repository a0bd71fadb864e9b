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

GRADING_FIELDS = {"check_sessions": int}


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
    """chNN -> how its notebooks are graded where it differs from the default (grading.toml), read without
    importing any chapter module."""
    table = tomllib.loads(resources.files(__name__).joinpath("grading.toml").read_text())
    known = names()
    for chapter, fields in table.items():
        if chapter not in known:
            raise ValueError(f"grader/chapters/grading.toml: [{chapter}] is no chapter; there are {', '.join(known)}")
        for field, value in fields.items():
            wanted = GRADING_FIELDS.get(field)
            if wanted is None or type(value) is not wanted or value < 1:
                raise ValueError(f"grader/chapters/grading.toml: [{chapter}] {field} = {value!r}: the fields are "
                                 + ", ".join(f"{f} (a whole number, at least 1)" for f in GRADING_FIELDS))
    return table


def check_sessions(chapter: str | None) -> int | None:
    """How many sessions a notebook of `chapter` gives its checks, where its chapter says (None: the default)."""
    return grading().get(chapter or "", {}).get("check_sessions")
