"""grader.processes: a subreaper keeps a daemon's double fork in its tree, an adopted process is told from the
process's own children by its session, and a tree ends whole, however fast it forks. Each test works in a
process tree of its own, named by a mark unique to the test, so that tests side by side never see each
other's processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from grader import processes
from leftovers import marked, wait_for

pytestmark = pytest.mark.skipif(not processes.supported(), reason="needs Linux's /proc")

# A daemon: Popen with a session of its own, then a fork whose first half exits. It sleeps for 60 s at most, and
# holds none of its starter's pipes (a test that captures output would wait for it).
DAEMON = textwrap.dedent("""
    import os, subprocess, sys, time
    subprocess.Popen([sys.executable, "-c",
                      "import os, time\\nif os.fork():\\n    os._exit(0)\\ntime.sleep(60)\\n", sys.argv[1]],
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
""")


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_subreaper_keeps_a_daemon_in_its_tree_and_ends_it(tmp_path):
    mark = f"ladder-test-daemon-{tmp_path.name}"
    proc = _run(f"""
        import subprocess, sys, time
        from grader import processes
        assert processes.become_subreaper()
        subprocess.run([sys.executable, "-c", {DAEMON!r}, sys.argv[1]], check=True)   # its parent is gone
        time.sleep(1.0)
        below = [p for p in processes.descendants(processes.os.getpid()) if p.alive]
        print("below", len([p for p in below if sys.argv[1] in p.command(400)]))
        ended = processes.end_tree(processes.os.getpid(), include_root=False)
        print("ended", len(ended), all(e.startswith("pid ") for e in ended))
    """, mark)
    assert proc.returncode == 0, proc.stderr
    assert "below 1" in proc.stdout and "ended 1 True" in proc.stdout, proc.stdout
    assert not marked(mark)


def test_without_a_subreaper_the_daemon_leaves_the_tree(tmp_path):
    """What the grader's processes prevent: without the subreaper the daemon is init's (or the nearest
    subreaper's above), out of the tree that started it."""
    mark = f"ladder-test-daemon-{tmp_path.name}"
    try:
        proc = _run(f"""
            import subprocess, sys, time
            from grader import processes
            subprocess.run([sys.executable, "-c", {DAEMON!r}, sys.argv[1]], check=True)
            time.sleep(1.0)
            print("below", len([p for p in processes.descendants(processes.os.getpid())
                               if sys.argv[1] in p.command(400)]))
        """, mark)
        assert proc.returncode == 0, proc.stderr
        assert "below 0" in proc.stdout and wait_for(lambda: marked(mark)), proc.stdout
    finally:
        for pid in marked(mark):   # the daemon this test started, by its own mark
            os.kill(pid, 9)


def test_adopted_children_are_told_from_own_children_by_their_session(tmp_path):
    mark = f"ladder-test-daemon-{tmp_path.name}"
    proc = _run(f"""
        import subprocess, sys, time
        from grader import processes
        processes.become_subreaper()
        own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1] + "-own"],
                               stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-c", {DAEMON!r}, sys.argv[1] + "-daemon"], check=True)
        time.sleep(1.0)
        adopted = [p.command(400) for p in processes.adopted() if p.alive]   # the daemon's first half: a zombie
        print("adopted", sorted(a.rsplit(" ", 1)[1] for a in adopted))
        try:
            processes.end_all(processes.adopted())
            print("zombies left", [p.pid for p in processes.children(processes.os.getpid()) if not p.alive])
        finally:
            own.kill()
            own.wait()
    """, mark)
    assert proc.returncode == 0, proc.stderr
    assert f"adopted ['{mark}-daemon']" in proc.stdout and "zombies left []" in proc.stdout, proc.stdout
    assert not marked(mark)


def test_a_tree_that_keeps_forking_ends_whole(tmp_path):
    """A tree of 31 processes four levels deep, each forking a short-lived child over and over while it is ended:
    stopped from the top down before the kill, nothing of it is left."""
    mark = f"ladder-test-forks-{tmp_path.name}"
    tree = textwrap.dedent("""
        import os, time
        level = 0
        while level < 4:                       # two children a process, four levels below the root
            if os.fork() == 0 or os.fork() == 0:
                level += 1
                continue
            break
        deadline = time.time() + 30
        while time.time() < deadline:          # then fork and reap, over and over
            pid = os.fork()
            if pid == 0:
                time.sleep(0.005)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    root = subprocess.Popen([sys.executable, "-c", tree, mark])
    try:
        assert wait_for(lambda: len(marked(mark)) >= 31)
        ended = processes.end_tree(root.pid)
        assert len(ended) >= 31, ended
        root.wait(timeout=10)
        assert wait_for(lambda: not marked(mark), 5), marked(mark)
    finally:
        for pid in marked(mark):   # what this test started, by its own mark
            os.kill(pid, 9)
        root.kill()
        root.wait()


def test_a_process_is_read_from_proc_and_described_by_its_command_line():
    me = processes.read(os.getpid())
    assert me.pid == os.getpid() and me.ppid == os.getppid() and me.sid == os.getsid(0) and me.alive
    assert "python" in me.describe() and me.describe().startswith(f"pid {os.getpid()} (")
    assert processes.read(2 ** 22 + 1) is None   # past the kernel's largest pid: no such process
