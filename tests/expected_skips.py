"""Without a GPU the suite skips exactly the tests listed in gpu_only_skips.txt, each because it needs a
GPU, and nothing else: a test that starts skipping for another reason (a package or a server CI lost),
or a GPU test added or removed without the list, fails the run instead of hiding in the skip count.

Checked only when the whole suite ran (the README's `pytest`): a narrowed run (`pytest tests/test_layout.py`, `-k`,
`-m "not slow"`, `--lf`, LADDER_CLASS, a run stopped at its first failure) skips a different set, and
is left alone. tests/conftest.py wires these functions to pytest's hooks.
"""

from __future__ import annotations

import os
from pathlib import Path

LIST = Path(__file__).with_name("gpu_only_skips.txt")
# What a GPU-only skip says: tests/conftest.py's marker for `gpu` tests, and the skipif of the few that
# test GPU-only behaviour without the marker.
GPU_REASONS = ("needs an NVIDIA GPU", "needs a GPU")


def expected() -> list[str]:
    """The node ids in gpu_only_skips.txt (blank lines and # comments left out)."""
    lines = (line.strip() for line in LIST.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def whole_suite(config) -> bool:
    """Whether this run collects every test: the testpaths (no paths given, or exactly them), and no
    option or setting that leaves tests out or makes them skip."""
    option = config.option
    given = sorted(Path(arg.split("::")[0]).resolve() for arg in config.args)
    testpaths = sorted((config.rootpath / path).resolve() for path in config.getini("testpaths"))
    narrowed = (option.keyword or option.markexpr or getattr(option, "deselect", None) or getattr(option, "lf", False)
                or getattr(option, "ignore", None) or getattr(option, "ignore_glob", None)
                or any("::" in arg for arg in config.args) or os.environ.get("LADDER_CLASS"))
    return given == testpaths and not narrowed


def skip_reason(report) -> str:
    """The reason a skipped test report gives ("Skipped: " and pytest's location left out)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def problems(skipped: dict[str, str], listed: list[str]) -> list[str]:
    """What is wrong with this run's skips ({node id: reason}) against the list: an empty list if nothing."""
    found = []
    not_listed = {node: why for node, why in skipped.items() if node not in listed}
    for node, why in sorted(not_listed.items()):
        found.append(f"skipped, not in {LIST.name}: {node} ({why})")
    for node in sorted(set(listed) - set(skipped)):
        found.append(f"listed in {LIST.name} but not skipped: {node}")
    for node, why in sorted(skipped.items()):
        if node in listed and not why.startswith(GPU_REASONS):
            found.append(f"skipped for a reason other than a missing GPU: {node} ({why})")
    if len(set(listed)) != len(listed):
        found.append(f"{LIST.name} lists a test twice")
    return found
