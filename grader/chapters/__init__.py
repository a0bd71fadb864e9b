"""One module per chapter: its exercises as data, and the check functions its notebook calls."""

from __future__ import annotations

from ..exercise import Exercise


def all_exercises() -> dict[str, Exercise]:
    """Every exercise of every chapter, keyed as in bars.toml."""
    from . import ch01

    found: dict[str, Exercise] = {}
    for module in (ch01,):
        for ex in module.EXERCISES:
            if ex.key in found:
                raise ValueError(f"exercise key {ex.key!r} defined twice")
            found[ex.key] = ex
    return found


def all_bar_keys() -> dict[str, str]:
    """Every pass-bar key a chapter uses, mapped to its exercise key."""
    from . import ch01

    keys: dict[str, str] = {}
    for module in (ch01,):
        keys.update(module.BAR_KEYS)
    return keys
