"""The machine's check slots (grader.notebooks.slots): students graded at once on one machine share them, a
check waits for a free one and says how long, and a slot is free again when its holder ends."""

from __future__ import annotations

import threading
import time

from grader import config
from grader.notebooks import slots


def test_a_check_waits_for_a_slot_and_the_wait_is_measured(monkeypatch, tmp_path):
    monkeypatch.setenv("LADDER_HOST_CHECKS", "1")
    monkeypatch.setattr(slots.tempfile, "gettempdir", lambda: str(tmp_path))
    config.unpin()
    holding, release = threading.Event(), threading.Event()

    def holder():
        with slots.machine_slot() as waited:
            assert waited < 1
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(10)
    threading.Timer(0.5, release.set).start()
    with slots.machine_slot() as waited:
        assert waited >= 0.4          # it waited for the one slot
    thread.join()


def test_a_cancelled_wait_stops_without_a_slot(monkeypatch, tmp_path):
    monkeypatch.setenv("LADDER_HOST_CHECKS", "1")
    monkeypatch.setattr(slots.tempfile, "gettempdir", lambda: str(tmp_path))
    config.unpin()
    cancel = threading.Event()
    with slots.machine_slot():
        threading.Timer(0.3, cancel.set).start()
        start = time.perf_counter()
        with slots.machine_slot(cancel) as waited:
            assert 0.2 <= waited < 5
        assert time.perf_counter() - start < 5


def test_the_default_is_one_slot_a_cpu(monkeypatch):
    monkeypatch.delenv("LADDER_HOST_CHECKS", raising=False)
    config.unpin()
    assert config.host_checks() >= 1
