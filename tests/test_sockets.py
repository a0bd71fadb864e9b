"""The grader under a temporary folder whose path is too long for a Unix socket (grader.sockets): a CI runner's or
a batch job's own folder can be. The kernels' sockets and multiprocessing's listeners go under /tmp there, and
`ladder check --isolated` grades as anywhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from conftest import ROOT
from grader import sockets

CH01 = ROOT / "solutions" / "01_vector_add" / "01_vector_add.ipynb"


def _long_folder(tmp_path):
    folder = tmp_path / ("t" * (sockets.UNIX_SOCKET_PATH_MAX - len(str(tmp_path))))
    folder.mkdir()
    assert len(os.fsencode(str(folder))) > sockets.UNIX_SOCKET_PATH_MAX - 20
    return folder


def test_the_kernels_sockets_stay_in_the_temporary_folder_where_they_fit(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")
    assert sockets.kernel_socket_prefix() == f"/tmp/ladder-kernel-{os.getpid()}"
    monkeypatch.setattr(tempfile, "tempdir", str(_long_folder(tmp_path)))
    prefix = sockets.kernel_socket_prefix()
    assert prefix == os.path.join(sockets.SHORT_FOLDER, f"ladder-kernel-{os.getpid()}")
    assert len(os.fsencode(prefix)) + len("-99999") <= sockets.UNIX_SOCKET_PATH_MAX


def test_multiprocessing_gets_a_short_folder_only_where_the_temporary_one_is_too_long(tmp_path):
    """In a process of its own: multiprocessing keeps the first folder it makes for the life of the process."""
    script = ("import json, multiprocessing.connection as c, multiprocessing.util as u, tempfile\n"
              "from grader import sockets\n"
              "made = sockets.short_multiprocessing_folder()\n"
              "listener = c.Listener(family='AF_UNIX')\n"
              "print(json.dumps([made, u.get_temp_dir(), listener.address, tempfile.gettempdir()]))\n"
              "listener.close()\n")
    for folder, short in ((tmp_path, False), (_long_folder(tmp_path), True)):
        proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, TMPDIR=str(folder)),
                              capture_output=True, text=True, check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        made, used, address, temporary = json.loads(proc.stdout)
        assert temporary == str(folder), "the learner's temporary folder is left as it was"
        assert (made is not None) is short and used.startswith(sockets.SHORT_FOLDER if short else str(folder))
        assert len(os.fsencode(address)) <= sockets.UNIX_SOCKET_PATH_MAX


def test_ladder_check_isolated_grades_under_a_long_temporary_folder(tmp_path):
    """Both kinds of socket in use: the notebook's kernel, and a learner's function called on the CPU in the worker
    (the napkin cells), as `ladder check --isolated` runs them."""
    folder = _long_folder(tmp_path)
    script = os.path.join(os.path.dirname(sys.executable), "ladder")
    proc = subprocess.run([script, "check", "--isolated", "--json", str(CH01)], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=600,
                          env=dict(os.environ, TMPDIR=str(folder), LADDER_CACHE_DIR=str(tmp_path / "cache")))
    assert "File name too long" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    (report,) = json.loads(proc.stdout)["notebooks"]
    assert report["error"] is None, report["error"]
    cells = {c["grade_id"]: c for c in report["cells"]}
    for gid in ("napkin-test", "fusion-napkin-test", "diagnose-test"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    assert report["checked_score"] == report["checked_max_score"] == 3.0, report
