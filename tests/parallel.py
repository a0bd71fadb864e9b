"""How the suite runs in parallel: pytest-xdist, one worker process per core, on a machine with no GPU.

Why a default rather than a flag: the README's test command stays `pytest`, and CI runs exactly that.
On a GPU the suite runs in one process, because its speed checks time the GPU and two at once would
time each other; a machine without pytest-xdist (a GPU image with pytest alone) runs in one process too.
`-n 0` asks for one process anywhere, `-n N` for N workers.

Tests that share a module- or session-scoped fixture of the suite's own (a class graded once, a notebook
run once, a server started once) are sent to one worker as a group (xdist's `loadgroup`), so that the
fixture's work is done once per run, as it is without workers. The groups are found from each test's
fixtures, not written by hand, so a new shared fixture is grouped as soon as it exists. Tests that share
work through a process-wide cache instead (tests/cuda/test_cross_arch.py's compiled kernels) name their
group with `pytest.mark.xdist_group`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The suffix xdist gives a grouped test's node id ("tests/x.py::test_y@shared-..."): taken off again wherever
# node ids are compared with a list (tests/gpu_only_skips.txt).
GROUP_PREFIX = "shared-"


def choose_workers(config, has_gpu: bool) -> None:
    """Turn on xdist's workers for this run unless a GPU is here, xdist is missing, or the command line chose."""
    option = config.option
    if not config.pluginmanager.hasplugin("xdist") or getattr(option, "numprocesses", None) is not None:
        return
    if is_worker(config) or os.environ.get("PYTEST_XDIST_WORKER"):
        return   # a worker runs its tests itself: workers of its own would multiply without end
    if has_gpu or option.collectonly or getattr(option, "usepdb", False):
        return
    option.numprocesses = "auto"
    if option.dist == "no":
        option.dist = "loadgroup"


def auto_workers() -> int:
    """One worker per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _shared_fixtures(item) -> list[str]:
    """The suite's own module- and session-scoped fixtures `item` uses, each named as one instance of it:
    a module fixture once per module, a session fixture once per run. Autouse fixtures are left out (the
    conftest's session check of course/ is every test's, and cheap), and so are pytest's own."""
    found = []
    info = getattr(item, "_fixtureinfo", None)   # pytest's record of a test's fixtures; no public accessor
    if info is None:
        return found
    # initialnames: the autouse fixtures, then those the test asks for (arguments, usefixtures)
    asked = set(info.argnames) | {name for mark in item.iter_markers("usefixtures") for name in mark.args}
    autouse = set(info.initialnames) - asked
    for name, defs in info.name2fixturedefs.items():
        fixturedef = defs[-1]
        if fixturedef.scope not in ("module", "session", "package") or name in autouse:
            continue
        code = getattr(fixturedef.func, "__code__", None)
        if code is None or TESTS not in Path(code.co_filename).resolve().parents:
            continue
        # a parametrized fixture has one instance per parameter (indirect parametrization: one per chapter)
        params = getattr(getattr(item, "callspec", None), "params", {})
        instance = f"{name}[{params[name]}]" if name in params else name
        where = item.module.__name__ if fixturedef.scope == "module" else "run"
        found.append(f"{instance}@{where}")
    return found


def group_shared_work(items) -> None:
    """Mark tests that share a fixture instance (directly, or through another test) with one xdist group."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    used = {}
    for item in items:
        keys = _shared_fixtures(item)
        used[item] = keys
        for other in keys[1:]:
            parent[find(other)] = find(keys[0])
    for item, keys in used.items():
        if keys:
            item.add_marker(pytest.mark.xdist_group(GROUP_PREFIX + find(keys[0]).replace("@", "-in-")))


def plain_node_id(nodeid: str) -> str:
    """A node id without the group suffix xdist gives grouped tests."""
    head, sep, tail = nodeid.rpartition("@")
    return head if sep and tail.startswith(GROUP_PREFIX) else nodeid


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")
