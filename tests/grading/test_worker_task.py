"""What a worker sets up around one student (grader.classgrade.task), without grading anyone: the
coordinator's settings replace the worker's own, the student's compile caches are theirs alone and
removed afterwards, and the worker's environment comes back exactly as it was. A leak here would let one
student's kernels or settings reach the next student, which whole gradings of a few students may not show."""

import os
import socket

import pytest

from grader import config
from grader.classgrade import task
from grader.classgrade.job import StudentJob


def _job(student="alice", bars=None, settings=None):
    return StudentJob("01_vector_add", "01_vector_add.ipynb", student, b"{}", "ab" * 32, {}, "cd" * 32, bars,
                      "ef" * 32, settings or {})


def test_the_coordinators_settings_replace_the_workers_and_everything_comes_back(tmp_path, monkeypatch):
    monkeypatch.setenv("LADDER_CELL_TIMEOUT_S", "999")          # the worker's own: must not apply
    monkeypatch.setenv("LADDER_ISOLATED", "0")                  # not set by the coordinator: must not apply
    monkeypatch.setenv("LADDER_CACHE_DIR", str(tmp_path / "worker-cache"))   # each machine keeps its own
    before = dict(os.environ)
    with task._student_environment(_job(settings={"LADDER_CELL_TIMEOUT_S": "45"}), tmp_path):
        assert os.environ["LADDER_CELL_TIMEOUT_S"] == "45"
        assert "LADDER_ISOLATED" not in os.environ
        assert os.environ["LADDER_CACHE_DIR"] == str(tmp_path / "worker-cache")
    assert dict(os.environ) == before


def test_each_student_compiles_into_caches_of_their_own_removed_afterwards(tmp_path):
    seen = {}
    for student in ("alice", "bob"):
        with task._student_environment(_job(student), tmp_path):
            triton_cache = os.environ["TRITON_CACHE_DIR"]
            assert os.environ["TRITON_CACHE_AUTOTUNING"] == "1" and os.environ["CUPY_CACHE_DIR"] != triton_cache
            os.makedirs(triton_cache)
            open(os.path.join(triton_cache, "kernel.cubin"), "w").close()
            seen[student] = triton_cache
        assert not os.path.exists(seen[student]), f"{student}'s compiled kernels outlived their grading"
    assert seen["alice"] != seen["bob"]


def test_the_bars_in_force_travel_as_bytes_and_are_used(tmp_path, monkeypatch):
    monkeypatch.setenv("LADDER_BARS", "/the/workers/own/bars.toml")
    with task._student_environment(_job(bars=b'["1a"]\nbar = 0.5\n'), tmp_path):
        assert open(os.environ["LADDER_BARS"], "rb").read() == b'["1a"]\nbar = 0.5\n'
    assert os.environ["LADDER_BARS"] == "/the/workers/own/bars.toml"


def test_the_environment_comes_back_even_when_grading_fails(tmp_path):
    before = dict(os.environ)
    with pytest.raises(RuntimeError):
        with task._student_environment(_job(settings={"LADDER_CELL_TIMEOUT_S": "1"}), tmp_path):
            raise RuntimeError("autograde broke")
    assert dict(os.environ) == before


def test_only_the_settings_a_worker_must_share_are_shipped(monkeypatch):
    for name in config.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LADDER_CELL_TIMEOUT_S", "45")
    monkeypatch.setenv("LADDER_CACHE_DIR", "/tmp/mine")
    monkeypatch.setenv("LADDER_BARS", "/tmp/bars.toml")
    monkeypatch.setenv("HOME_OF_SOMETHING_ELSE", "x")
    assert task.settings_to_ship() == {"LADDER_CELL_TIMEOUT_S": "45"}


@pytest.mark.parametrize("visible, says", [("", None), ("3,0,1", "GPU 3")])
def test_where_names_the_host_and_the_workers_first_gpu(monkeypatch, visible, says):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert task.where() == socket.gethostname() + (f" {says}" if says else "")
