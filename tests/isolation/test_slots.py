"""The machine's check slots (grader.isolation.slots): students graded at once on one machine share them, a
check waits for a free one and says how long, and a slot is free again when its holder ends."""

from __future__ import annotations

import threading
import time

from grader.isolation import slots


def test_a_check_waits_for_a_slot_and_the_wait_is_measured(monkeypatch, tmp_path):
    monkeypatch.setattr(slots.tempfile, "gettempdir", lambda: str(tmp_path))
    holding, release = threading.Event(), threading.Event()

    def holder():
        with slots.machine_slot(1) as waited:
            assert waited < 1
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(10)
    threading.Timer(0.5, release.set).start()
    with slots.machine_slot(1) as waited:
        assert waited >= 0.4          # it waited for the one slot
    thread.join()


def test_a_cancelled_wait_stops_without_a_slot(monkeypatch, tmp_path):
    monkeypatch.setattr(slots.tempfile, "gettempdir", lambda: str(tmp_path))
    cancel = threading.Event()
    with slots.machine_slot(1):
        threading.Timer(0.3, cancel.set).start()
        start = time.perf_counter()
        with slots.machine_slot(1, cancel) as waited:
            assert 0.2 <= waited < 5
        assert time.perf_counter() - start < 5


def test_one_slot_a_cpu_and_never_fewer_than_one_notebook_runs_at_once(monkeypatch):
    monkeypatch.setattr(slots.os, "cpu_count", lambda: 16)
    assert [slots.host_slots(n) for n in (1, 4, 16, 24)] == [16, 16, 16, 24]   # a student alone never waits
