"""Where students are graded: in this process (one GPU, the default: no Dask process is started), or on
Dask workers, each of which grades one student at a time on one GPU.

- `--gpus N`: dask-cuda's LocalCUDACluster, one worker per GPU, each pinned to its own GPU through
  CUDA_VISIBLE_DEVICES (which the notebook kernels and the isolated checks it starts inherit).
- `--workers N`: N local worker processes with no GPU pinning, so only where no GPU is in use (a machine
  without GPUs, or LADDER_FORCE_NO_GPU; the tests): refused where its students would share one.
- `--scheduler ADDR`: an existing Dask scheduler whose workers were started with `--nthreads 1
  --resources GPU=1` and one GPU each (docs/instructors.md, "A Slurm cluster").
- `--cluster slurm|pbs|sge|lsf --jobs N`: dask-jobqueue submits N batch jobs of one worker and one GPU.

Every task asks for the resource GPU=1, and every worker made here has exactly one, so no two students
ever share a GPU. Dask re-queues the student of a worker that died on another worker, up to `retries`
times (its scheduler's `allowed-failures`).
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from .. import config
from ..errors import LadderError

RESOURCE = {"GPU": 1}
# Per batch job: one worker, one GPU, one task at a time; CPU cores for compiling and the notebook kernel.
JOBQUEUE_DEFAULTS = {"cores": 4, "processes": 1, "memory": "32GB", "walltime": "04:00:00"}
GPU_DIRECTIVE = {"slurm": "--gres=gpu:1", "pbs": "-l ngpus=1", "sge": "-l gpu=1", "lsf": '-gpu "num=1"'}
JOBQUEUE_CLASSES = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster", "lsf": "LSFCluster"}


@dataclass
class Where:
    gpus: int | None = None          # local GPUs, one worker each (LocalCUDACluster)
    workers: int | None = None       # local CPU worker processes
    scheduler: str | None = None     # an existing scheduler's address
    cluster: str | None = None       # a batch system, through dask-jobqueue
    jobs: int = 1
    cluster_options: dict = field(default_factory=dict)
    retries: int = 2

    @property
    def uses_dask(self) -> bool:
        return bool((self.gpus and self.gpus > 1) or self.workers or self.scheduler or self.cluster)


def _need(module: str, extra: str = "class"):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise LadderError(f"grading on Dask workers (--gpus N, --workers, --scheduler, --cluster) needs "
                          f"{module.split('.')[0]}: pip install -e '.[{extra}]'") from None


def jobqueue():
    """dask_jobqueue, imported with this process's SIGINT handler kept.

    dask-jobqueue sets a SIGINT handler as it is imported (`signal.signal` in `dask_jobqueue.runner`, 0.9),
    which only the main thread may do: imported first in `Starting`'s thread it raised "signal only works in
    main thread", and every `--cluster` failed. So `Starting` imports it from the main thread before its own
    thread starts; and the handler it set (an exit with no KeyboardInterrupt) is put back, so that Ctrl-C stops
    `ladder grade` as it does without a batch system."""
    import signal
    import sys
    import threading

    if "dask_jobqueue" in sys.modules or threading.current_thread() is not threading.main_thread():
        return _need("dask_jobqueue")
    kept = signal.getsignal(signal.SIGINT)
    try:
        return _need("dask_jobqueue")
    finally:
        signal.signal(signal.SIGINT, kept)


# The variable each batch system sets in its jobs to the job's id (SGE's JOB_ID is a common name: read only
# where SGE_ROOT says the job is SGE's).
BATCH_JOB_IDS = (("SLURM_JOB_ID", "Slurm"), ("PBS_JOBID", "PBS"), ("LSB_JOBID", "LSF"), ("JOB_ID", "SGE"))


def batch_job() -> str:
    """The batch job this process runs in ("Slurm job 42"), or "" outside one: where a student was graded names
    it, so that the scheduler's own records (sacct, qstat) can be found from the class's summary."""
    for variable, system in BATCH_JOB_IDS:
        value = os.environ.get(variable, "").strip()
        if value and (system != "SGE" or os.environ.get("SGE_ROOT")):
            return f"{system} job {value}"
    return ""


def own_gpu() -> str:
    """The GPU this process's CUDA work lands on: the first of CUDA_VISIBLE_DEVICES ("" where it is unset).
    dask-cuda gives each worker the list rotated, its own GPU first."""
    return os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()


@contextmanager
def only_own_gpu():
    """CUDA_VISIBLE_DEVICES narrowed to this worker's own GPU while the block runs, so that the processes it
    starts (a notebook's kernel, every check's verifier and worker) start no CUDA on the others (each process's
    CUDA start grows with the GPUs it sees), and code they run cannot reach, or time itself against, another
    task's GPU."""
    saved, own = os.environ.get("CUDA_VISIBLE_DEVICES"), own_gpu()
    if own:
        os.environ["CUDA_VISIBLE_DEVICES"] = own
    try:
        yield
    finally:
        if saved is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved


def visible_gpus() -> int:
    """GPUs this process may use, from NVML (no CUDA context is made here)."""
    try:
        import pynvml
    except ImportError:
        pynvml = None
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            pynvml.nvmlShutdown()
            pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
            return min(count, len([d for d in pinned.split(",") if d.strip()])) if pinned else count
        except pynvml.NVMLError:
            return 0
    return 0


@contextmanager
def client_for(where: Where):
    """A Dask client for `where`, closed with everything it started; None where no Dask is wanted."""
    if not where.uses_dask:
        yield None
        return
    dask = _need("dask")
    distributed = _need("distributed")
    with dask.config.set({"distributed.scheduler.allowed-failures": where.retries,
                          # a student's grading holds its worker's only thread for minutes; that is work, not a hang
                          "distributed.admin.tick.limit": "1h",
                          # a student queued behind a straggler moves to a free worker (grader.classgrade.schedule)
                          "distributed.scheduler.work-stealing": True}):
        cluster = None
        try:
            if where.scheduler:
                client = distributed.Client(where.scheduler)
                _check_workers(client)
            else:
                cluster = _local_or_batch(where, distributed)
                client = distributed.Client(cluster)
                if where.cluster:
                    submit(cluster, where)
            try:
                yield client
            finally:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()


class Starting:
    """`client_for(where)` entered in a thread of its own from the moment this is made, so that Dask's workers
    start (and `then(client)` runs, e.g. a warm-up on every worker) while the caller prepares the workspace;
    and left in a thread of its own once the caller has nothing more to give the workers, so that they stop
    while it records its last students. Why: on four H200s the time of a class outside its students was 12 s
    before the first started and 4 s after the last ended, against 8-10 s in all on one GPU without Dask
    (assets/results/class-grading/one-two-four-gpus-h200x4). An error starting Dask is raised by `client()`."""

    def __init__(self, where: Where, then=None):
        from concurrent.futures import ThreadPoolExecutor

        if where.cluster:
            try:
                jobqueue()   # from this thread, the main one (jobqueue says why)
            except LadderError:
                pass         # raised again by `client()`, as every error starting Dask is
        self._stack = ExitStack()
        self.ready: float | None = None   # when the client and `then` were done (epoch seconds)
        self.prepared = None              # what `then` returned
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ladder-dask")
        self._started = self._pool.submit(self._start, where, then)
        self._stopping = None

    def _start(self, where: Where, then):
        client = self._stack.enter_context(client_for(where))
        if then is not None and client is not None:
            self.prepared = then(client)
        self.ready = time.time()
        return client

    def client(self):
        """The client, once Dask has started (waits for it); raises what starting it raised."""
        return self._started.result()

    def stop_soon(self) -> None:
        """Start closing the client and what it started, in the background."""
        if self._stopping is None:
            self._stopping = self._pool.submit(self._stop)

    def _stop(self) -> None:
        if self._started.exception() is None:   # waits for the start; a failed start left nothing open
            self._stack.close()

    def stop(self) -> None:
        """Close it all, waiting for that to end (an error starting Dask is not raised again here)."""
        self.stop_soon()
        try:
            self._stopping.result()
        finally:
            self._pool.shutdown()


def _local_or_batch(where: Where, distributed):
    if where.gpus:
        available = visible_gpus()
        if available == 0:
            raise LadderError(f"--gpus {where.gpus}: no GPU found (NVML sees none). Without GPUs, --workers N grades "
                              "on N processes: correctness and the CPU cells still count, speed cells say no GPU")
        if where.gpus > available:
            raise LadderError(f"--gpus {where.gpus}: this machine shows {available} GPU(s)")
        dask_cuda = _need("dask_cuda")
        # Each worker grades one student at a time and runs that student's checks ahead of the notebook as wide
        # as a student graded alone (grader.isolation.ahead); the workers share the machine's CPUs through its
        # check slots (grader.isolation.slots), not by a fixed part each.
        devices = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [d.strip() for d in devices.split(",")] if devices else [str(i) for i in range(available)]

        class CUDAClusterWithoutWorkerContexts(dask_cuda.LocalCUDACluster):
            def new_worker_spec(self):
                return without_worker_contexts(super().new_worker_spec())

        return CUDAClusterWithoutWorkerContexts(CUDA_VISIBLE_DEVICES=",".join(ids[:where.gpus]),
                                                threads_per_worker=1, resources=RESOURCE, memory_limit=0)
    if where.workers:
        # Nothing pins these workers to a GPU: on a machine with one, two students' speed cells would time
        # each other, and "one student, one GPU" is what makes a verdict independent of the class.
        shared = 0 if config.force_no_gpu() else visible_gpus()
        if shared:
            raise LadderError(f"--workers {where.workers}: this machine has {shared} GPU(s), and --workers gives no "
                              "student a GPU of its own: students graded at once would share one and time their speed "
                              "cells against each other. Use --gpus N (one worker pinned to each of N GPUs), or no "
                              "flag (one student at a time on one GPU)")
        return distributed.LocalCluster(n_workers=where.workers, threads_per_worker=1, processes=True,
                                        resources=RESOURCE, memory_limit=0)
    kind = where.cluster.lower()
    if kind not in JOBQUEUE_CLASSES:
        raise LadderError(f"--cluster {where.cluster}: use one of {', '.join(JOBQUEUE_CLASSES)}")
    options = dict(JOBQUEUE_DEFAULTS, **where.cluster_options)
    options.setdefault("job_extra_directives", [GPU_DIRECTIVE[kind]])
    options["worker_extra_args"] = [*options.get("worker_extra_args", []), "--resources", "GPU=1"]
    return getattr(jobqueue(), JOBQUEUE_CLASSES[kind])(**options)


def submit(cluster, where: Where) -> None:
    """Submit the batch jobs of `where` and return once the batch system has taken them (not once they run: a
    queue may hold them for hours).

    Not `cluster.scale(jobs=N)`, which submits them from dask-jobqueue's event loop, where a refusal (no `sbatch`
    on this machine; a partition, account or GPU request the batch system rejects) is only logged as a traceback,
    and `ladder grade` then waited for workers for ever. The same two steps as `scale`, with the submission
    awaited here (SpecCluster's __init__ starts its workers so), so that the batch system's own message stops
    the run."""
    import shutil

    # Looked for first: LSF's submission goes through a shell, whose "not found" says nothing of bsub
    program = cluster.job_cls.submit_command.split()[0]
    if shutil.which(program) is None:
        raise LadderError(f"--cluster {where.cluster}: {program} is not on this machine's PATH: run `ladder grade` "
                          f"where {where.cluster} jobs can be submitted (a login node)")
    while len(cluster.worker_spec) < where.jobs:   # one entry a batch job (JobQueueCluster.scale)
        cluster.worker_spec.update(cluster.new_worker_spec())
    try:
        cluster.sync(cluster._correct_state)
    except Exception as exc:   # noqa: BLE001 - whatever the submission raised, said in one message
        from distributed.core import Status

        # a job never submitted has nothing to cancel: marked failed, which is what SpecCluster's close expects of it
        for name, job in list(cluster.workers.items()):
            if getattr(job, "job_id", None) is None:
                job.status = Status.failed
                del cluster.workers[name]
                cluster.worker_spec.pop(name, None)
        # dask-jobqueue's message holds the command, its exit code, its stdout and its stderr: the last says why
        said = " ".join(str(exc).rpartition("stderr:")[2].split()) or " ".join(str(exc).split())
        raise LadderError(f"--cluster {where.cluster}: the batch system refused the worker jobs: {said[-1500:]}. "
                          "Check --cluster-option (queue, account, walltime, memory, cores, "
                          "job_extra_directives)") from None


# dask-cuda starts every worker with its preload `dask_cuda.initialize --create-cuda-context` (for UCX, which this
# grader does not use), and no argument of LocalCUDACluster turns it off.
CREATE_CONTEXT, NO_CONTEXT = "--create-cuda-context", "--no-create-cuda-context"


def without_worker_contexts(specs: dict) -> dict:
    """dask-cuda's worker specs (name -> {"cls", "options"}) with its preload told to create no CUDA context.

    Why: a worker grades by starting processes and never runs CUDA itself, so that a context a student's code
    broke is never the worker's own (grader.classgrade.task); yet each worker held a context of its own, 518 MiB
    on its GPU for the whole class beside the students' processes, made while the workers started together
    (gpu_apps.txt.gz in assets/results/class-grading/doubled-chapter1-one-two-gpus-h200x2)."""
    for spec in specs.values():
        options = spec["options"]
        options["preload_argv"] = [NO_CONTEXT if arg == CREATE_CONTEXT else arg
                                   for arg in options.get("preload_argv", [])]
    return specs


def _check_workers(client) -> None:
    """An existing scheduler's workers must each offer one GPU as a resource, or no task would ever run."""
    import inspect

    takes = "n_workers" in inspect.signature(client.scheduler_info).parameters
    workers = (client.scheduler_info(n_workers=-1) if takes else client.scheduler_info())["workers"]
    if workers and not any(w.get("resources", {}).get("GPU") for w in workers.values()):
        raise LadderError("the scheduler's workers offer no GPU resource: start each with one GPU and "
                          "`dask worker ADDR --nthreads 1 --resources GPU=1` (docs/instructors.md)")


def dashboard(client) -> str | None:
    """The dashboard's address, where the scheduler serves one (it needs bokeh)."""
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:  # noqa: BLE001 - only a convenience
        return None
    return client.dashboard_link if "dashboard" in services else None


def parse_options(pairs: list[str]) -> dict:
    """--cluster-option KEY=VALUE pairs, values read as YAML scalars or lists (queue=gpu, cores=8,
    job_extra_directives=['--gres=gpu:a100:1'])."""
    import yaml

    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise LadderError(f"--cluster-option {pair!r}: write KEY=VALUE, e.g. queue=gpu")
        key, value = pair.split("=", 1)
        try:
            out[key.strip().replace("-", "_")] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            raise LadderError(f"--cluster-option {pair}: its value is not YAML ({getattr(exc, 'problem', None) or exc}"
                              + (f" at column {where.column + 1}" if where else "")
                              + "); quote lists as YAML does, e.g. job_extra_directives=['--gres=gpu:a100:1']") from None
    return out
