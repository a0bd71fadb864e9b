"""Where the grader's Unix sockets go, whatever the temporary folder's path.

A Unix socket's path holds at most 107 bytes (sun_path's 108, less its terminating zero). Two kinds of socket
are made under the temporary folder: the notebook kernels' ZeroMQ sockets (`ipc://`, grader.notebooks.settings),
and the listener through which `multiprocessing` hands a CPU tensor's file descriptor from the verifier to the
worker (`multiprocessing.resource_sharer`, under `multiprocessing.util.get_temp_dir()`). A CI runner's or a
batch job's own temporary folder can be long enough for both to fail: every kernel failed to start with "ZMQError:
File name too long", and every call of a learner's function on a CPU failed to reach its worker, whose verifier
then waited for it as for a worker that had died. Where the folder is too long, both go under /tmp instead, which every POSIX system has.
"""

from __future__ import annotations

import os
import tempfile

UNIX_SOCKET_PATH_MAX = 107
SHORT_FOLDER = "/tmp"


def _fits(path: str, suffix_bytes: int) -> bool:
    return len(os.fsencode(path)) + suffix_bytes <= UNIX_SOCKET_PATH_MAX


def kernel_socket_prefix() -> str:
    """The prefix of this process's kernels' sockets (jupyter_client adds "-" and a number for each of a kernel's
    five): named by this process, so that two graders at once never meet."""
    name = f"ladder-kernel-{os.getpid()}"
    prefix = os.path.join(tempfile.gettempdir(), name)
    return prefix if _fits(prefix, len("-99999")) else os.path.join(SHORT_FOLDER, name)


# A listener's address below the folder: "/pymp-XXXXXXXX/listener-XXXXXXXX" (multiprocessing.connection).
LISTENER_SUFFIX_BYTES = len("/pymp-xxxxxxxx/listener-xxxxxxxx")


def short_multiprocessing_folder() -> str | None:
    """Make this process's `multiprocessing` folder one whose listeners' paths fit, where the temporary folder's do
    not: its processes forked from now on (verifiers, and the workers they fork) inherit it. Returns the folder made,
    for its maker to remove when it ends (a process that leaves by os._exit runs no finalizer), or None where the
    temporary folder will do. Python's multiprocessing (3.13 included) takes the temporary folder as it is, and keeps
    the first folder it makes for the life of the process: made here once, while tempfile points at /tmp."""
    import multiprocessing.util

    if _fits(tempfile.gettempdir(), LISTENER_SUFFIX_BYTES):
        return None
    saved = tempfile.tempdir
    tempfile.tempdir = SHORT_FOLDER
    try:
        return multiprocessing.util.get_temp_dir()
    finally:
        tempfile.tempdir = saved
