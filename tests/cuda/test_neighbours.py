"""The GPU's other processes while a speed verdict is timed (grader.cuda.neighbours), on a CPU with NVML's answers
faked: who counts as a neighbour (a process sampled busy that is not one of the timing's own; without
per-process utilization, one that appeared during the timing; in another PID namespace, busy processes beyond
the timing's own number), what the speed report and `ladder check --json` say, and that the harness measures a
crowded verdict again."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from grader.cuda import clocks, neighbours
from grader.harness import exercise, timing
from grader.harness.results import SpeedResult
from grader.calls.contender import Contender
from leftovers import marked, wait_for

NOT_FOUND = 6   # NVML_ERROR_NOT_FOUND


class FakeNVML(types.ModuleType):
    """pynvml as the neighbours module calls it: the GPU's compute processes and their SM utilization samples,
    changed by the test between readings."""

    NVML_ERROR_NOT_FOUND = NOT_FOUND
    NVML_VALUE_NOT_AVAILABLE = 2 ** 64 - 1

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(f"NVML error {value}")
            self.value = value

    def __init__(self):
        super().__init__("pynvml")
        self.procs: dict[int, int] = {}            # pid -> bytes of GPU memory
        self.samples: list[tuple[int, int, int]] = []   # (pid, timestamp in µs, SM %)
        self.utilization_supported = True

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.procs.items()]

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle):
        raise self.NVMLError(3)   # not supported: MPS is off

    def nvmlDeviceGetProcessUtilization(self, handle, since):
        if not self.utilization_supported:
            raise self.NVMLError(3)
        found = [types.SimpleNamespace(pid=p, timeStamp=t, smUtil=u, memUtil=0, encUtil=0, decUtil=0)
                 for p, t, u in self.samples if t > since]
        if not found:
            raise self.NVMLError(NOT_FOUND)
        return found

    def nvmlSystemGetProcessName(self, pid):
        return b"/usr/bin/elsewhere"

    def busy(self, pid: int, pct: int) -> None:
        self.samples.append((pid, len(self.samples) + 1000, pct))


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(clocks, "handle", lambda: "device-0")
    return fake


@pytest.fixture
def helper():
    """A real process of this machine's, standing for a learner's detached helper: its pid has a command line."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "a-helper-on-the-gpu"])
    # Popen may return while the child is still replacing itself with python (an empty command line, read as none)
    assert wait_for(lambda: proc.pid in marked("a-helper-on-the-gpu")), "the helper did not start"
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_process_that_computes_beside_the_timing_is_a_neighbour(nvml, helper):
    worker = os.getpid() + 1_000_000   # a worker's pid as the timing knows it (this namespace's, never sampled here)
    nvml.procs = {os.getpid(): 600 * 2**20, helper: 300 * 2**20}
    watch = neighbours.Neighbours()
    watch.add_ours(worker)
    watch.begin()
    nvml.busy(os.getpid(), 90)
    nvml.busy(worker, 95)
    watch.sample()
    assert not watch.crowded, "present and idle: the notebook's kernel, a check's idle process"
    nvml.busy(helper, 40)
    watch.sample()
    assert watch.crowded and [n.pid for n in watch.crowding] == [helper]
    text = watch.describe()
    assert f"pid {helper} (" in text and "time.sleep(60)" in text and "300 MiB" in text and "40%" in text
    record = watch.as_dict()
    assert record["crowded"] and record["others"][0]["pid"] == helper and record["readings"] == 2


def test_without_utilization_samples_a_process_that_appeared_during_the_timing_counts(nvml, helper):
    nvml.utilization_supported = False
    kernel = os.getppid()
    nvml.procs = {os.getpid(): 1, kernel: 1}
    watch = neighbours.Neighbours()
    watch.begin()
    watch.sample()
    assert not watch.crowded, "the notebook's kernel was on the GPU before the timing began"
    nvml.procs[helper] = 1
    watch.sample()
    assert [n.pid for n in watch.crowding] == [helper] and watch.crowding[0].new
    assert "started during the timing" in watch.describe() and not watch.utilization


def test_in_another_pid_namespace_busy_processes_beyond_the_timings_own_count(nvml):
    host = [4_000_001, 4_000_002, 4_000_003]   # the host's ids: none is a process of this namespace
    nvml.procs = {pid: 1 for pid in host}
    watch = neighbours.Neighbours()
    watch.add_ours(os.getpid() + 1_000_000)   # the worker: two of ours, under ids NVML does not use
    watch.begin()
    nvml.busy(host[0], 90)
    nvml.busy(host[1], 80)
    watch.sample()
    assert not watch.same_namespace and not watch.crowded, "two busy, two of ours"
    nvml.busy(host[2], 50)
    watch.sample()
    assert watch.crowded and "another PID namespace" in watch.describe() and "3 processes" in watch.describe()


def test_without_nvml_the_reading_says_why_and_nothing_is_crowded(monkeypatch):
    monkeypatch.setattr(clocks, "handle", lambda: None)
    monkeypatch.setattr(clocks, "why_not", lambda: "no GPU")
    watch = neighbours.Neighbours()
    watch.begin()
    watch.sample()
    assert not watch.crowded and watch.describe() == "other processes on the GPU not read (no GPU)"


class _FakeBatch(Contender):
    """A learner's timed batches as the backend sees them (a Contender): where they run, and their time."""

    def __init__(self, pid: int, on_batch=None):
        self.pid, self.on_batch = pid, on_batch

    @property
    def process_id(self) -> int:
        return self.pid

    def timed_batch(self, reps: int) -> float:
        if self.on_batch:
            self.on_batch()
        return 40.0


def test_the_timing_backend_reads_the_gpus_processes_after_every_batch_and_knows_the_workers(nvml, helper,
                                                                                                monkeypatch):
    worker = helper + 1_000_000
    backend = timing.BatchBackend(device="cuda")
    monkeypatch.setattr(backend, "flush", lambda: None)
    nvml.procs = {os.getpid(): 1, worker: 1}
    backend.times_ms(_FakeBatch(worker, on_batch=lambda: nvml.busy(worker, 90)))
    assert worker in backend.neighbours.ours and not backend.neighbours.crowded
    assert backend.neighbours.readings == backend.batches == 3
    nvml.procs[helper] = 1
    backend.times_ms(_FakeBatch(worker, on_batch=lambda: nvml.busy(helper, 30)))
    assert [n.pid for n in backend.neighbours.crowding] == [helper]


def _result(crowded_by: int | None) -> SpeedResult:
    watch = neighbours.Neighbours()
    watch.readings, watch.utilization = 6, True
    if crowded_by is not None:
        watch.seen[crowded_by] = neighbours.Neighbour(crowded_by, "python helper.py", 512.0, 45)
    cmp = timing.Comparison(timing.Timing("yours", [1.0] * 5), timing.Timing("torch.mm", [0.8] * 5), {}, 5, 1.0,
                            "batch", neighbours=watch)
    return SpeedResult(key="5a", title="Triton matmul", size="M=N=K=4096", gpu="NVIDIA H200", comparison=cmp,
                       bar=0.75, graded=True, passed=True, bytes_moved=1, flops=2 * 4096 ** 3,
                       ceiling_name="fp16_tflops", ceiling_value=None, baseline_name="torch.mm")


def test_the_speed_report_and_its_record_say_who_shared_the_gpu():
    quiet, crowded = _result(None), _result(4242)
    assert "GPU: no other process computed on the GPU while it was timed (6 readings)" in quiet.report()
    assert not quiet.as_record()["crowded"]
    report = crowded.report()
    assert "⚑ GPU: 1 other process(es) computed on the GPU while it was timed" in report
    assert "pid 4242 (python helper.py, 512 MiB, up to 45% of the SMs)" in report
    record = crowded.as_record()
    assert record["crowded"] and record["neighbours"]["others"][0]["pid"] == 4242


@pytest.mark.parametrize("second_crowded", [False, True], ids=["gone", "still-there"])
def test_a_crowded_verdict_is_measured_again_and_reported(monkeypatch, second_crowded):
    results = [_result(4242), _result(4242 if second_crowded else None)]
    monkeypatch.setattr(exercise, "_device", lambda device: "cuda")
    monkeypatch.setattr(exercise, "_measure", lambda *args: results.pop(0))
    ex = types.SimpleNamespace(key="5a", cpu_sizes=None)
    monkeypatch.setattr(exercise, "learner_for", lambda ex, fn: fn)
    monkeypatch.setattr(exercise, "bar_for", lambda key: None)
    result = exercise.measure_speed(ex, lambda *a: None)
    assert not results, "measured twice"
    assert result.remeasured_because == "crowded" and result.remeasured_from == pytest.approx(0.8)
    assert "measured again after a first timing at 0.80x torch.mm beside pid 4242" in result.report()
    flagged = any("twice" in flag for flag in result.flags)
    assert flagged == second_crowded
