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
from types import ModuleType


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
