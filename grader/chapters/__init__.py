"""One module per chapter (`ch01`, `ch02`, ...): its exercises as data, and the checks its notebook calls.

Every module named `chNN` in this package is a chapter; each defines `EXERCISES` (its `Exercise`
values) and `BAR_KEYS` (every pass-bar key it uses, mapped to its exercise key).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from ..exercise import Exercise


def chapter_modules() -> list[ModuleType]:
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if re.fullmatch(r"ch\d\d", m.name))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def all_exercises() -> dict[str, Exercise]:
    """Every exercise of every chapter, keyed as in bars.toml."""
    found: dict[str, Exercise] = {}
    for module in chapter_modules():
        for ex in module.EXERCISES:
            if ex.key in found:
                raise ValueError(f"exercise key {ex.key!r} defined twice")
            found[ex.key] = ex
    return found


def all_bar_keys() -> dict[str, str]:
    """Every pass-bar key a chapter uses, mapped to its exercise key."""
    keys: dict[str, str] = {}
    for module in chapter_modules():
        keys.update(module.BAR_KEYS)
    return keys
