"""What a worker sets up around one student (grader.classgrade.task), without grading anyone: the
coordinator's settings replace the worker's own, so do its values of what a Dask nanny sets before its worker
starts, the student's compile caches are theirs alone and removed afterwards, and the worker's environment
comes back exactly as it was. A leak here would let one
student's kernels or settings reach the next student, which whole gradings of a few students may not show."""

import os
import socket

import pytest

from grader import config
from grader.classgrade import task
from grader.classgrade.job import StudentJob


def _job(student="alice", bars=None, settings=None, environ=None):
    return StudentJob("01_vector_add", "01_vector_add.ipynb", student, b"{}", "ab" * 32, {}, "cd" * 32, bars,
                      "ef" * 32, settings or {}, environ or {})


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


NANNY = {"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_the_coordinators_values_replace_what_a_dask_nanny_set_and_come_back(tmp_path, monkeypatch):
    for name, value in NANNY.items():                 # as a nanny leaves its worker's environment
        monkeypatch.setenv(name, value)
    before = dict(os.environ)
    shipped = {"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": None, "MKL_NUM_THREADS": "4"}
    with task._student_environment(_job(environ=shipped), tmp_path):
        assert "MALLOC_TRIM_THRESHOLD_" not in os.environ and "OMP_NUM_THREADS" not in os.environ
        assert os.environ["MKL_NUM_THREADS"] == "4"
    assert dict(os.environ) == before


def test_the_nannys_variables_are_shipped_with_the_coordinators_values(monkeypatch):
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    shipped = task.environ_to_ship()
    assert shipped["MALLOC_TRIM_THRESHOLD_"] is None and shipped["OMP_NUM_THREADS"] == "3"
    assert {"MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONHASHSEED"} <= set(shipped)


def test_a_students_processes_on_a_dask_worker_get_the_coordinators_environment(tmp_path):
    """On a real nanny-started worker (local processes): a process the grading starts inherits the nanny's
    pre-spawn variables unless the student's environment puts the coordinator's back."""
    import contextlib
    import subprocess
    import sys

    import distributed

    saved = dict(os.environ)      # a local cluster's nannies set their variables in this process too
    try:
        for name in NANNY:
            os.environ.pop(name, None)
        os.environ["OMP_NUM_THREADS"] = "3"
        shipped = task.environ_to_ship()
        job = _job(environ=shipped)

        def child_sees(job, scratch, around):
            probe = [sys.executable, "-c", f"import os; print([os.environ.get(n) for n in {sorted(NANNY)!r}])"]
            with task._student_environment(job, scratch) if around else contextlib.nullcontext():
                return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()

        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            bare = client.submit(child_sees, job, tmp_path, False, pure=False).result()
            graded = client.submit(child_sees, job, tmp_path, True, pure=False).result()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    # sorted names: MALLOC_TRIM_THRESHOLD_, MKL_NUM_THREADS, OMP_NUM_THREADS
    assert bare == "['65536', '1', '3']"       # the nanny's, where the coordinator had none
    assert graded == "[None, None, '3']"


def test_a_worker_prepared_before_its_first_student_does_not_generate_the_assignment_again(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(task.course, "generate", lambda folder, assignment, source: made.append((folder, assignment)))
    monkeypatch.setattr(task, "_SCRATCH", tmp_path)
    monkeypatch.setattr(task, "_GENERATED", set())
    before = dict(os.environ)
    shared = _job(student="", settings={"LADDER_CELL_TIMEOUT_S": "45"})
    assert task.prepare_worker(shared) >= 0 and made == [(tmp_path / "course", "01_vector_add")]
    assert shared.source_sha256 in task._GENERATED   # grade_student's first student skips generating it
    task.prepare_worker(shared)
    assert len(made) == 1 and dict(os.environ) == before
