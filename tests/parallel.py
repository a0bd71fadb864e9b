"""How the suite runs in parallel: pytest-xdist, one worker process per core and one more, on a machine with
no GPU.

Why a default rather than a flag: the README's test command stays `pytest`, and CI runs exactly that.
On a GPU the suite runs in one process, because its speed checks time the GPU and two at once would
time each other; a machine without pytest-xdist (a GPU image with pytest alone) runs in one process too.
`-n 0` asks for one process anywhere, `-n N` for N workers.

Tests that share a module- or session-scoped fixture of the suite's own (a class graded once, a notebook
run once, a server started once) are sent to one worker as a group, so that the fixture's work is done once
per run, as it is without workers. The groups are found from each test's fixtures, not written by hand, so a
new shared fixture is grouped as soon as it exists. Tests that share work through a process-wide cache instead
(tests/cuda/test_cross_arch.py's compiled kernels) name their group with `pytest.mark.xdist_group`.

Why a scheduler of the suite's own (SharedWorkScheduling) rather than xdist's `--dist loadgroup`: that one
finds a test's group in a suffix its workers add to the test's node id, and under pytest 9 the node id can no
longer be set that way, so every test was scheduled alone and a class fixture was graded once per worker. The
workers write each test's group to a file (GROUPS_FILE) as they collect, and the controller's scheduler reads
it: xdist's own scope scheduler, keeping each group's tests together.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
GROUP_PREFIX = "shared-"
# The file the workers write {node id: group} to, named by the controller for the run (its workers inherit it).
GROUPS_FILE = "LADDER_SUITE_GROUPS_FILE"


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
    if option.dist == "loadgroup":
        import tempfile

        fd, path = tempfile.mkstemp(prefix="ladder-suite-groups-", suffix=".json")
        os.close(fd)
        os.environ[GROUPS_FILE] = path
        import atexit

        atexit.register(lambda: Path(path).unlink(missing_ok=True))
    # One thread a process for torch's and NumPy's pools: the workers already use every core, and two workers'
    # notebook kernels each spinning a pool of one thread a core spent CPU waiting for each other. The workers,
    # and the kernels and checks they start, inherit it; a value the command line's environment set is kept.
    for pool in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(pool, "1")


def auto_workers() -> int:
    """One worker per core this process may use, and one more. Why the one more: a quarter of a 2-core run's CPU
    sat idle with one worker a core, while tests waited out what they test (a hung cell's time limit, a kernel's
    interrupt, a batch job's start, a server's); a third worker's tests run in those waits."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1


def _shared_fixtures(item) -> list[str]:
    """The suite's own module- and session-scoped fixtures `item` uses, each named as one instance of it:
    a module fixture once per module, a session fixture once per run. Autouse fixtures are left out (the
    conftest's session check of course/ is every test's, and cheap), and so are pytest's own."""
    found = []
    info = getattr(item, "_fixtureinfo", None)   # pytest's record of a test's fixtures; no public accessor
    if info is None:
        return found
    # What the test asks for (arguments, usefixtures) and what those ask for in turn; not what only an autouse
    # fixture asks for (the cache folder's shared ptxas reports: every test's).
    asked, queue = set(), list(info.argnames) + [name for mark in item.iter_markers("usefixtures") for name in mark.args]
    while queue:
        name = queue.pop()
        if name in asked or name not in info.name2fixturedefs:
            continue
        asked.add(name)
        queue += list(info.name2fixturedefs[name][-1].argnames)
    for name, defs in info.name2fixturedefs.items():
        fixturedef = defs[-1]
        if fixturedef.scope not in ("module", "session", "package") or name not in asked:
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
    groups = {}
    for item, keys in used.items():
        named = [mark.args[0] for mark in item.iter_markers("xdist_group") if mark.args]
        if named:
            groups[item.nodeid] = named[0]
        elif keys:
            groups[item.nodeid] = GROUP_PREFIX + find(keys[0]).replace("@", "-in-")
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    _write_groups(groups)


def _write_groups(groups: dict[str, str]) -> None:
    """In a worker of a grouped run, every test's group for the controller's scheduler, written whole (each worker
    collects the same tests and writes the same groups)."""
    path = os.environ.get(GROUPS_FILE)
    if not path or not is_worker_process():
        return
    part = f"{path}.{os.getpid()}"
    Path(part).write_text(json.dumps(groups))
    os.replace(part, path)


def make_scheduler(config, log):
    """xdist's scope scheduler, each test's scope its group (GROUPS_FILE) or, alone, itself."""
    if config.getvalue("dist") != "loadgroup" or not os.environ.get(GROUPS_FILE):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedWorkScheduling(LoadScopeScheduling):
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:   # read once every worker has collected (xdist schedules only then)
                self._groups = json.loads(Path(os.environ[GROUPS_FILE]).read_text() or "{}")
            return self._groups.get(nodeid, nodeid)

    return SharedWorkScheduling(config, log)


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def is_worker_process() -> bool:
    """Whether this process is one of xdist's workers (whose temporary folders share one parent)."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))
