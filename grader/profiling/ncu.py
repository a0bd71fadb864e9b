"""Nsight Compute run on a learner's launcher: `ladder profile NOTEBOOK --exercise ID`.

ncu starts grader.profiling.target (the learner's saved notebook, the exercise at its graded size)
and profiles only the kernels inside the target's NVTX range. The profile is exported as a .ncu-rep
(for Nsight Compute's UI) and read back as its raw CSV page (grader.profiles.report says why CSV).
Every way this can fail ends in a ProfileUnavailable whose message says what to do next; callers
then show the recorded H100 rungs (grader.profiles.recorded).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import LadderError
from ..profiles.report import read_raw_csv
from ..profiles.signature import EXTRA_METRICS, SECTIONS, Signature, signatures_from_rows, with_launch_totals
from .target import RANGE

TIMEOUT_S = 600

COUNTERS_HELP = (
    "This GPU's performance counters are reserved for administrators (ERR_NVGPUCTRPERM). An administrator "
    "can allow every user to read them: add `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file "
    "in /etc/modprobe.d/ and reboot (or reload the nvidia module); on Windows, NVIDIA Control Panel > "
    "Developer > Manage GPU Performance Counters. Running ncu with administrator rights (sudo) also works. "
    "See https://developer.nvidia.com/ERR_NVGPUCTRPERM. Colab and many cloud notebooks do not allow it.")


class ProfileUnavailable(LadderError):
    """Nothing was profiled, for a reason the message gives with the way forward."""


@dataclass
class Profile:
    exercise: str
    signatures: list[Signature]      # the learner's kernels, longest first
    target: dict                     # what the target process reported (size, launch time, flops...)
    csv_path: Path
    rep_path: Path

    @property
    def main(self) -> Signature:
        """The longest kernel, with the whole call's totals."""
        return with_launch_totals(self.signatures)


def find_ncu() -> str | None:
    """ncu on PATH, else under CUDA_HOME/CUDA_PATH, /usr/local/cuda, or Nsight Compute's own install folder."""
    found = shutil.which("ncu")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        if os.access(os.path.join(root, "bin", "ncu"), os.X_OK):
            return os.path.join(root, "bin", "ncu")
    installs = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return installs[-1] if installs else None


def unavailable_reason() -> str | None:
    """Why profiling cannot start in this process's environment, or None when it can be tried. The GPU
    comes first: without one the course itself turns the Triton interpreter on (grader.harness.session)."""
    from ..cuda.gpu import gpu_or_reason
    ok, reason = gpu_or_reason()
    if not ok:
        return f"{reason}: Nsight Compute profiles GPU kernels only."
    if os.environ.get("TRITON_INTERPRET") == "1":
        return ("TRITON_INTERPRET=1 is set: Triton kernels run on the CPU through the interpreter, so there is "
                "no GPU kernel to profile. Unset it (and restart the kernel) to profile on this GPU.")
    if find_ncu() is None:
        return ("Nsight Compute (`ncu`) is not installed or not on PATH. It comes with the CUDA toolkit "
                "(`/usr/local/cuda/bin/ncu`) or on its own from https://developer.nvidia.com/nsight-compute.")
    return None


def command(ncu: str, notebook: Path, exercise: str, report: Path, export: Path, launcher: str | None,
            size: str | None) -> list[str]:
    target = [sys.executable, "-m", "grader.profiling.target", str(notebook), "--exercise", exercise,
              "--report", str(report)]
    if launcher:
        target += ["--launcher", launcher]
    if size:
        target += ["--size", size]
    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    # --clock-control none: profile at the clocks the GPU runs at when timed, as the speed cells see it.
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--nvtx", "--nvtx-include", f"{RANGE}/",
            *sections, "--metrics", ",".join(EXTRA_METRICS), "--export", str(export), "--force-overwrite", *target]


def _explain(output: str, code: int, target: dict | None) -> str:
    if "ERR_NVGPUCTRPERM" in output:
        return COUNTERS_HELP
    if target and target.get("outcome") not in (None, "ok"):
        return f"your notebook could not be profiled: {target['message']}"
    if "No kernels were profiled" in output:
        return ("ncu profiled no kernel inside your launcher: it launched nothing on the GPU (a torch op that "
                "torch itself runs does not count as your kernel).")
    tail = "\n".join(l for l in output.strip().splitlines()[-6:])
    return f"ncu stopped with exit code {code}:\n{tail}"


def profile_notebook(notebook: Path, exercise: str, out_dir: Path | None = None, launcher: str | None = None,
                     size: str | None = None, timeout_s: float = TIMEOUT_S) -> Profile:
    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise ProfileUnavailable(f"no notebook at {notebook}")
    reason = unavailable_reason()
    if reason:
        raise ProfileUnavailable(reason)
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix="ladder-profile-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{notebook.stem}-{exercise}"
    report, export = out_dir / f"{stem}.target.json", out_dir / stem
    cmd = command(find_ncu(), notebook, exercise, report, export, launcher, size)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                                      os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(cmd, check=False, cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ProfileUnavailable(f"ncu did not finish in {timeout_s:.0f} s. Profile a smaller size: "
                                 f"`ladder profile {notebook.name} --exercise {exercise} --size '[...]'`") from None
    output = done.stdout + done.stderr
    (out_dir / f"{stem}.ncu.log").write_text(output)
    target = json.loads(report.read_text()) if report.is_file() else None
    rep = export.with_suffix(".ncu-rep")
    if done.returncode != 0 or not rep.is_file() or (target and target.get("outcome") != "ok"):
        raise ProfileUnavailable(_explain(output, done.returncode, target))
    csv_text = subprocess.run([find_ncu(), "--import", str(rep), "--csv", "--page", "raw"], check=False, capture_output=True,
                              text=True, timeout=120).stdout
    csv_path = out_dir / f"{stem}.csv"
    csv_path.write_text(csv_text)
    try:
        rows = read_raw_csv(csv_text)
    except ValueError:
        raise ProfileUnavailable(_explain(output, done.returncode, target)) from None
    if not rows:
        raise ProfileUnavailable(_explain(output + "\nNo kernels were profiled", done.returncode, target))
    return Profile(exercise, signatures_from_rows(rows, exercise, "yours"), target or {}, csv_path, rep)
