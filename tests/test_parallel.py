"""The suite's own xdist scheduler (tests/parallel.py): a group's tests go to one worker, and the heaviest group or
test left is handed out first, so that a test of a minute never starts when the other workers are nearly done."""

import json
from collections import OrderedDict
from types import SimpleNamespace

import parallel


class _Config:
    """What xdist's scope scheduler reads of pytest's config: three workers, the suite's grouped scheduling."""

    option = SimpleNamespace(numprocesses=3, tx=["3*popen"], dist="loadgroup", loadscopereorder=True)

    def getvalue(self, name):
        return getattr(self.option, name)

    def getoption(self, name, default=None):
        return getattr(self.option, name, default)


class _Node:
    def __init__(self):
        self.sent = []

    def send_runtest_some(self, indexes):
        self.sent.append(indexes)


def test_a_slow_test_is_handed_out_before_a_group_of_quick_ones(tmp_path, monkeypatch):
    collection = ["t.py::quick_a", "t.py::quick_b", "t.py::quick_c", "t.py::lonely_slow", "t.py::lonely_quick"]
    written = tmp_path / "groups.json"
    written.write_text(json.dumps({"groups": {n: "shared-x" for n in collection[:3]}, "slow": ["t.py::lonely_slow"]}))
    monkeypatch.setenv(parallel.GROUPS_FILE, str(written))
    scheduler = parallel.make_scheduler(_Config(), None)
    node = _Node()
    scheduler.registered_collections[node] = collection
    scheduler.assigned_work[node] = {}
    for nodeid in collection:
        scheduler.workqueue.setdefault(scheduler._split_scope(nodeid), OrderedDict())[nodeid] = False
    order = []
    while scheduler.workqueue:
        scheduler._assign_work_unit(node)
        order.append([collection[i] for i in node.sent[-1]])
    assert order == [["t.py::lonely_slow"], ["t.py::quick_a", "t.py::quick_b", "t.py::quick_c"],
                     ["t.py::lonely_quick"]]


def test_a_slow_test_weighs_twenty_quick_ones():
    assert parallel.weight({"a": False}, {"a"}) == 20 == parallel.weight({str(i): False for i in range(20)}, set())
