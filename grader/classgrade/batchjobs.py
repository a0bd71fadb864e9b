"""Which of a class's batch jobs (`ladder grade --cluster`) are still in their batch system, and what those that ended
wrote: so that a run whose every job ended before its worker joined stops and says why, instead of waiting for a
worker that will never come.

dask-jobqueue submits and cancels the jobs but never asks the batch system about them (a job that exits before its
worker starts is, to it, a job still starting), so the question goes to each system's own listing of a user's
unfinished jobs. Each listing is one short command, read the same way: the job ids it names.
"""

from __future__ import annotations

import getpass
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Each system's list of the jobs of one user that have not ended (queued, held or running), and how to read an id
# from each line of it.
UNFINISHED = {
    "slurm": (["squeue", "--noheader", "--format=%i", "--user={user}"], r"^\s*(\d+)"),
    "pbs": (["qselect", "-u", "{user}"], r"^\s*(\d+)"),            # PBS Pro and Torque: one "123.server" a line
    "sge": (["qstat", "-u", "{user}"], r"^\s*(\d+)\s"),            # a table under two header lines
    "lsf": (["bjobs", "-noheader", "-o", "jobid", "-u", "{user}"], r"^\s*(\d+)"),   # unfinished jobs only
}
# How much of an ended job's own output a message quotes: its last lines, and at most this many characters of them.
TAIL_LINES = 5
TAIL_CHARS = 400


def job_number(job_id: str) -> str:
    """The number a batch system lists a job by: PBS's qsub answers "123.server", its qselect may say "123.srv"."""
    return str(job_id).strip().split(".", 1)[0]


def unfinished(system: str, listing: str) -> set[str]:
    """The job numbers a system's UNFINISHED listing names."""
    pattern = re.compile(UNFINISHED[system][1])
    return {m.group(1) for line in listing.splitlines() if (m := pattern.match(line))}


def list_unfinished(system: str) -> set[str] | None:
    """The numbers of this user's jobs that have not ended, asked of the batch system; None where it did not answer
    (its command missing or failing): nothing is known then, and nothing is concluded."""
    command, _ = UNFINISHED[system]
    try:
        done = subprocess.run([part.format(user=getpass.getuser()) for part in command], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # LSF says "No unfinished job found" on stderr with status 0 or 255, depending on its version
    if done.returncode != 0 and "No unfinished job" not in done.stderr:
        return None
    return unfinished(system, done.stdout)


@dataclass
class BatchJobs:
    """The batch jobs of one run: their system, ids and the folder their output goes to."""

    system: str
    ids: list[str]
    logs: Path | None

    @classmethod
    def of(cls, client, system: str, logs: str | None) -> BatchJobs | None:
        """The jobs behind `client`'s dask-jobqueue cluster, or None where it has none (a local cluster, a scheduler
        given by address)."""
        cluster = getattr(client, "cluster", None)
        workers = getattr(cluster, "workers", None) or {}
        ids = [str(job.job_id) for job in list(workers.values()) if getattr(job, "job_id", None)]
        if system not in UNFINISHED or not ids:
            return None
        return cls(system, ids, Path(logs) if logs else None)

    def all_ended(self) -> bool:
        """Whether the batch system says every job has ended (False where it does not answer)."""
        listed = list_unfinished(self.system)
        return listed is not None and not listed & {job_number(i) for i in self.ids}

    def why_ended(self) -> str:
        """What the ended jobs said: the last lines of each job's output files, where the folder holds them."""
        written = sorted(self.logs.iterdir()) if self.logs is not None and self.logs.is_dir() else []
        said = []
        for job_id in self.ids:
            number = job_number(job_id)
            files = [p for p in written if re.search(rf"(?<!\d){number}(?!\d)", p.name)]
            tails = []
            for path in files:
                lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
                if lines:
                    tails.append(f"{path.name}: " + " | ".join(lines[-TAIL_LINES:])[-TAIL_CHARS:])
            said.append(f"job {job_id}: " + ("; ".join(tails) if tails else "wrote nothing"))
        return "; ".join(said)

    def message(self) -> str:
        where = f" (their output: {self.logs})" if self.logs is not None else ""
        return (f"not graded: every {self.system} job of the run ended before its Dask worker joined{where}. "
                f"{self.why_ended()}. Check the jobs' environment (--cluster-option job_script_prologue, "
                "python) and run the same command again")
