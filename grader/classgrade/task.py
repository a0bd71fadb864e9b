"""One student graded on a worker: the only code that runs where the GPU is.

The worker keeps a scratch nbgrader course of its own (one per assignment source, made once per
process), autogrades the student there with this course's executor (grader.notebooks.nbexec, whose
graded checks run in fresh processes, grader.isolation) and sends back the executed notebook. It never
writes to the instructor's gradebook: grader.classgrade.record does, in one process, so that SQLite
keeps its single writer and a worker on another machine needs no access to it.

While a student is graded, Triton's and CuPy's caches point into a folder of that student's own, removed
afterwards: kernels compile once per student and a student's Triton autotuning results are reused across
their cells (TRITON_CACHE_AUTOTUNING), never across students, so no student's code can leave a compiled
kernel or a tuning result where another student's grading would load it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from .. import config
from . import course
from .cluster import batch_job, only_own_gpu, own_gpu
from .identity import grader_sha256
from .job import StudentJob, StudentResult

# Settings each machine keeps its own: its cache folder; the bars travel as bytes.
_OWN = ("LADDER_CACHE_DIR", "LADDER_BARS")
EVENT_TOPIC = "ladder-grading"    # Dask's event log: where each attempt at a student started
_SCRATCH: Path | None = None
_GENERATED: set[str] = set()      # source hashes whose assignment this process's scratch course holds

# A GPU that still runs a kernel and copies the right sum back. Run in a child process: this process
# (a Dask worker, or `ladder grade` itself) never initialises CUDA, so that a broken context is never its own.
_GPU_PROBE = ("import sys, torch\n"
              "if not torch.cuda.is_available(): sys.exit(0)\n"
              "x = torch.ones(1 << 20, device='cuda')\n"
              "assert int(x.sum().item()) == 1 << 20\n"
              "torch.cuda.synchronize()\n")
# Outputs after which the GPU is probed: a check or a kernel that crashed or hung may have been the GPU's fault.
_SUSPECT = ("[reason: crashed]", "[reason: timed-out]", "DeadKernelError", "CellTimeoutError", "KernelDied")


def where() -> str:
    """This host, the GPU this process's CUDA work lands on (grader.classgrade.cluster.own_gpu), and the batch job
    it runs in, if any."""
    gpu, job = own_gpu(), batch_job()
    return socket.gethostname() + (f" GPU {gpu}" if gpu else "") + (f", {job}" if job else "")


def _scratch() -> Path:
    global _SCRATCH
    if _SCRATCH is None or not _SCRATCH.is_dir():
        _SCRATCH = Path(tempfile.mkdtemp(prefix=f"ladder-worker-{os.getpid()}-"))
        _GENERATED.clear()
    return _SCRATCH


@contextmanager
def _student_environment(job: StudentJob, scratch: Path):
    saved = dict(os.environ)
    caches = scratch / "caches" / f"{job.student}-{job.submission_sha256[:16]}"
    try:
        for name in config.VARIABLES:      # the coordinator's LADDER_ settings decide, on any machine
            if name != "LADDER_CACHE_DIR":
                os.environ.pop(name, None)
        os.environ.update(job.settings)
        for name, value in job.environ.items():   # as where `ladder grade` ran, not as Dask's nanny left it
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if job.bars is not None:
            bars = scratch / f"bars-{job.grader_sha256[:16]}.toml"
            bars.write_bytes(job.bars)
            os.environ["LADDER_BARS"] = str(bars)
        os.environ["TRITON_CACHE_DIR"] = str(caches / "triton")
        os.environ["CUPY_CACHE_DIR"] = str(caches / "cupy")
        os.environ["TRITON_CACHE_AUTOTUNING"] = "1"
        with only_own_gpu():   # the student's processes see their own GPU only (grader.classgrade.cluster)
            yield caches
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(caches, ignore_errors=True)


def _note_attempt(job: StudentJob) -> None:
    """Tell the Dask scheduler where this attempt runs: the coordinator shows it, and when a worker dies
    mid-student, the earlier attempts say where it died (grader.classgrade.run)."""
    if "distributed" not in sys.modules:
        return   # not on a Dask worker, which imported it to start: nothing to import (0.3 s and NVML's bindings)
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return   # not on a Dask worker
    worker.log_event(EVENT_TOPIC, {"student": job.student, "worker": worker.address, "where": where(),
                                   "started": time.time(), "key": worker.get_current_task()})


def gpu_failure() -> str | None:
    """None if the GPU (or the lack of one) is as it was; otherwise what the probe saw."""
    try:
        probe = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return "a one-kernel probe of the GPU did not finish in 120 s"
    if probe.returncode != 0:
        return f"a one-kernel probe of the GPU failed: {(probe.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def _generate_once(job: StudentJob, workspace: Path) -> None:
    """The job's assignment generated in this process's scratch course `workspace`, once for each source."""
    if job.source_sha256 not in _GENERATED:
        course.generate(workspace, job.assignment, job.source)
        _GENERATED.add(job.source_sha256)


def prepare_worker(job: StudentJob) -> float:
    """On a Dask worker before its first student, while the coordinator prepares its workspace
    (grader.classgrade.cluster.Starting): generate the assignment in this worker's scratch course and import the
    autograder, which the worker's first student would otherwise wait for. `job` is any job of the class: only
    what every student shares is used. Returns the seconds it took."""
    start = time.perf_counter()
    scratch = _scratch()
    with _student_environment(job, scratch):
        _generate_once(job, scratch / "course")
        from ..notebooks import nbexec  # noqa: F401  (the executor nbgrader's autograde loads)
        from ..notebooks.settings import autograde_preprocessors

        autograde_preprocessors()
    return time.perf_counter() - start


def grade_student(job: StudentJob) -> StudentResult:
    """Autograde one student in this process's scratch course; what came of it."""
    start = time.perf_counter()
    _note_attempt(job)
    scratch = _scratch()
    workspace = scratch / "course"
    started = time.time()
    usage = _Usage()
    with _student_environment(job, scratch) as caches:
        mine = grader_sha256(job.bars)
        if mine != job.grader_sha256:
            return StudentResult(job.student, None, time.perf_counter() - start, where(), mine,
                                 error="this worker's grader differs from the instructor's (another version of the "
                                       "course, its bars or its settings): install the same version on every worker")
        _generate_once(job, workspace)
        submitted = workspace / "submitted" / job.student / job.assignment
        autograded = workspace / "autograded" / job.student / job.assignment
        for folder in (submitted, autograded):
            shutil.rmtree(folder, ignore_errors=True)
        submitted.mkdir(parents=True)
        (submitted / job.notebook).write_bytes(job.submission)
        from ..harness.quiet import captured_stderr

        with captured_stderr() as err:
            auto = course.api(workspace).autograde(job.assignment, job.student, force=True, create=True)
        executed = autograded / job.notebook
        data = executed.read_bytes() if executed.is_file() else None
        error = None
        if not auto["success"] or data is None:
            error = (auto.get("error") or auto.get("log") or "autograde failed") + "\n" + err.summary()
        for folder in (submitted, autograded):
            shutil.rmtree(folder, ignore_errors=True)
        built = _compiled(caches)
    failure = None
    if data is not None and any(mark in data.decode("utf-8", "replace") for mark in _SUSPECT):
        failure = gpu_failure()
    seconds = time.perf_counter() - start
    return StudentResult(job.student, None if failure else data, seconds, where(), mine, error=error,
                         gpu_failure=failure, started=started, split=usage.split(seconds, data, built))


class _Usage:
    """What one student's grading used of this machine, for the journal's split of their seconds
    (grader.classgrade.timing.student_split): this process's and its reaped children's CPU time (nbgrader, the
    notebook's kernel), the load when it began, the CPUs it may use."""

    def __init__(self):
        self.cpu = _cpu_seconds()
        self.load = os.getloadavg()[0]

    def split(self, seconds: float, executed: bytes | None, built: dict) -> dict:
        from .timing import student_split

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return student_split(executed, seconds, _cpu_seconds() - self.cpu, cpus, self.load, os.getloadavg()[0],
                             built)


def _cpu_seconds() -> float:
    import resource

    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _compiled(caches: Path) -> dict:
    """What the student's grading compiled and autotuned, counted in their own caches before they go:
    Triton's and CuPy's binaries, and Triton's autotuning results (TRITON_CACHE_AUTOTUNING)."""
    files = [p.name for p in caches.rglob("*") if p.is_file()] if caches.is_dir() else []
    return {"kernels": sum(name.endswith((".cubin", ".hsaco")) for name in files),
            "autotuned": sum(name.endswith(".autotune.json") for name in files)}


def settings_to_ship() -> dict[str, str]:
    """The coordinator's LADDER_ settings a worker must grade with (LADDER_BARS travels as bytes)."""
    return {k: v for k, v in os.environ.items() if k in config.VARIABLES and k not in _OWN}


def environ_to_ship() -> dict[str, str | None]:
    """The coordinator's value (None: unset) of each variable Dask's nanny sets in its own process before it
    starts a worker, which the worker's children then inherit: distributed.nanny.pre-spawn-environ
    (MALLOC_TRIM_THRESHOLD_=65536, OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1), and the hash
    seed the nanny adds to them. A student graded on a Dask worker then runs in the environment of one graded
    without Dask, the learner's own cells and `ladder check`: one verdict, and the same time. The trim threshold
    alone cost a Triton compile 2.7x the page faults and 6% more CPU (assets/results/class-grading/
    compile-malloc-trim-cpu/), and one OpenMP thread slows a learner's CPU code. Read here, before any cluster
    starts: a local cluster's nannies run in this process and set them in its environment too."""
    try:
        import dask
        import distributed  # noqa: F401  (registers distributed's defaults in dask.config)
    except ImportError:
        return {}            # no Dask here: nothing but this process grades, in this environment
    names = [*(dask.config.get("distributed.nanny.pre-spawn-environ", None) or {}), "PYTHONHASHSEED"]
    return {name: os.environ.get(name) for name in names}
