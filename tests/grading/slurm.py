"""A single-node Slurm of the test session's own: munged, slurmctld and slurmd from the machine's installation
(Debian's munge, slurmctld and slurmd packages, which .ci/run installs), started in a temporary folder on free
ports, with one node that offers two GPUs as a generic resource, so that `ladder grade --cluster slurm` submits
its batch jobs exactly as on a real cluster.

Set for a container without systemd or a writable cgroup tree, and for a machine without a GPU:
- the processes of a job are tracked through /proc (ProctrackType=proctrack/linuxproc) and not bound to CPUs
  (TaskPlugin=task/none); jobs are not sampled for accounting (JobAcctGatherType=jobacct_gather/none);
- the node's GPUs are device files that every machine has (gres.conf `File=/dev/null`, `/dev/zero`): Slurm
  hands them out and sets CUDA_VISIBLE_DEVICES as for real ones, and the graded students run the CPU paths
  (LADDER_FORCE_NO_GPU, tests/grading/classroom.py's CLASS_ENV);
- the node is declared with the CPUs and memory of two of `ladder grade`'s default batch jobs
  (grader.classgrade.cluster.JOBQUEUE_DEFAULTS), and slurmd keeps that declaration rather than counting the
  machine's (SlurmdParameters=config_overrides), so that the test submits the jobs an instructor's plain
  `--cluster slurm` submits;
- every finished job is written to Slurm's own job-completion record (JobCompType=jobcomp/filetxt), which
  `sacct --completion` reads: `sacct`'s usual source is slurmdbd and a MySQL server, two more daemons and
  seconds more for nothing this test asks.
Every path is in the session's folder, and every port its own: another test session on the same machine
(pytest-xdist's workers) starts a Slurm of its own beside this one.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from grading.classroom import missing_in_ci

NODE = "ladder-node"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sacct", "sinfo", "scancel")
JOBS_AT_ONCE = 2   # the node holds this many of `ladder grade`'s default jobs at once
START_S = 30   # every daemon up and the node idle: about 2 s on an idle machine


@dataclass
class Slurm:
    folder: Path
    conf: Path

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to use this Slurm: its slurm.conf, which names munged's socket too."""
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *command: str) -> str:
        """A Slurm command against this cluster; its output (fails the test with Slurm's message on an error)."""
        done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, **self.env), timeout=60,
                              check=False)
        assert done.returncode == 0, f"{' '.join(command)}: {done.stderr.strip()}"
        return done.stdout

    def completed_jobs(self) -> list[dict[str, str]]:
        """Every job Slurm recorded as ended, from its job-completion record (`sacct --completion`)."""
        fields = ("JobID", "JobName", "State", "NodeList", "Start", "End")
        lines = self.run(shutil.which("sacct"), "--completion", "--noheader", "--parsable2",
                         "--format", ",".join(fields), "--starttime", "2000-01-01").splitlines()
        return [dict(zip(fields, line.split("|"))) for line in lines if line.strip()]


def _program(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name)
                                       if p.is_file()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(folder: Path, user: str) -> str:
    from grader.classgrade.cluster import JOBQUEUE_DEFAULTS

    cpus = JOBQUEUE_DEFAULTS["cores"] * JOBS_AT_ONCE
    memory_mb = int(JOBQUEUE_DEFAULTS["memory"].removesuffix("GB")) * 1024 * JOBS_AT_ONCE
    return f"""\
ClusterName=ladder{os.getpid()}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge/socket
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=3600
KillWait=5
NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} Gres=gpu:{JOBS_AT_ONCE} State=UNKNOWN
PartitionName=gpu Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""


def _logs(folder: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                     for p in sorted((folder / "log").glob("*.log")) + sorted((folder / "munge").glob("*.log")))


@pytest.fixture(scope="session")
def slurm():
    """A Slurm cluster of one idle node with two GPUs, for the session; skipped where Slurm is not installed on a
    developer's machine, failed under CI=true (where .ci/run installs it) or wherever it is installed but does not
    start, with its daemons' logs."""
    missing = [name for name in PROGRAMS if _program(name) is None]
    if missing:
        missing_in_ci(f"Slurm is not installed (no {', '.join(missing)}; Debian: apt-get install slurmctld slurmd "
                      "slurm-client munge); .ci/run installs it")
    # Not under pytest's own temporary folder: munged refuses a socket in a folder that others cannot enter.
    folder = Path(tempfile.mkdtemp(prefix="ladder-slurm-"))
    for sub in ("munge", "state", "spool", "log"):
        (folder / sub).mkdir()
    for path in (folder, folder / "munge"):
        path.chmod(0o755)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, getpass.getuser()))
    (folder / "gres.conf").write_text("".join(f"NodeName={NODE} Name=gpu File={device}\n"
                                              for device in ("/dev/null", "/dev/zero")[:JOBS_AT_ONCE]))
    env = dict(os.environ, SLURM_CONF=str(conf))
    munge = folder / "munge"
    daemons = []
    try:
        for command in ([_program("munged"), "--foreground", f"--socket={munge}/socket", f"--key-file={key}",
                         f"--log-file={munge}/munged.log", f"--pid-file={munge}/munged.pid",
                         f"--seed-file={munge}/munged.seed"],
                        [_program("slurmctld"), "-D", "-c", "-i"],
                        [_program("slurmd"), "-D", "-N", NODE]):
            daemons.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                            start_new_session=True))
            deadline = time.monotonic() + START_S
            while command[0].endswith("munged") and not (munge / "socket").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        cluster = Slurm(folder, conf)
        deadline = time.monotonic() + START_S
        state = ""
        while time.monotonic() < deadline:
            dead = [d.args[0] for d in daemons if d.poll() is not None]
            if dead:
                pytest.fail(f"Slurm did not start: {', '.join(dead)} exited\n{_logs(folder)}", pytrace=False)
            state = subprocess.run([_program("sinfo"), "--noheader", "--format=%T", f"--nodes={NODE}"], env=env,
                                   capture_output=True, text=True, check=False).stdout.strip()
            if state == "idle":
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"Slurm's node was not idle after {START_S} s (it is {state or 'not reported'})\n"
                        f"{_logs(folder)}", pytrace=False)
        yield cluster
    finally:
        if daemons:   # the jobs a failed test left end before the daemons that run them
            subprocess.run([_program("scancel"), "--full", f"--nodelist={NODE}"], env=env, capture_output=True,
                           check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and subprocess.run(
                    [_program("squeue"), "--noheader"], env=env, capture_output=True, text=True,
                    check=False).stdout.strip():
                time.sleep(0.2)
        for daemon in reversed(daemons):   # slurmd first, then slurmctld, then munged
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(folder, ignore_errors=True)
