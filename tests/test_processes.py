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


def test_torchs_own_processes_end_with_the_tree_but_are_not_reported_as_the_learners(tmp_path):
    """A tree as a notebook's kernel leaves it after chapter 8's `torch.compile` comparison: Inductor's compile-worker
    pool (named by its path, with a worker below it, whose own command line does not name it) beside a process of
    the learner's. end_tree ends all four and reports only the learner's: the notebook's report of what the
    learner's code left running (`ladder check`'s "your code left N process(es) running") applies the rule the
    stray-process check applies (processes.torchs_own)."""
    mark = f"ladder-test-torchs-{tmp_path.name}"
    pool = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', " \
           "sys.argv[2] + '-worker'])\ntime.sleep(60)\n"
    root = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {pool!r}, "x/torch/_inductor/compile_worker/__main__.py", sys.argv[1]])
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1] + "-learner"])
        time.sleep(60)
    """), mark])
    try:
        assert wait_for(lambda: len(marked(mark)) == 4), marked(mark)
        learner = next(p.pid for p in processes.descendants(root.pid) if p.command(400).endswith(f"{mark}-learner"))
        ended = processes.end_tree(root.pid, include_root=False)
        assert len(ended) == 1 and ended[0].startswith(f"pid {learner} ("), ended
        assert wait_for(lambda: marked(mark) == [root.pid], 5), "torch's processes must end all the same"
    finally:
        for pid in marked(mark):   # what this test started, by its own mark
            os.kill(pid, 9)
        root.wait()


def test_a_process_is_read_from_proc_and_described_by_its_command_line():
    me = processes.read(os.getpid())
    assert me.pid == os.getpid() and me.ppid == os.getppid() and me.sid == os.getsid(0) and me.alive
    assert "python" in me.describe() and me.describe().startswith(f"pid {os.getpid()} (")
    assert processes.read(2 ** 22 + 1) is None   # past the kernel's largest pid: no such process


def test_a_root_known_by_its_start_time_is_left_alone_once_its_number_is_anothers():
    """A verifier is the fork server's child, reaped there: by the time the asking process ends its tree, its number
    may belong to a new process of anyone's. Known by its start time, such a root is left alone."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "kernel-ladder-number-given-again"])
    try:
        # Popen returns while the child may still be replacing itself with the new program (an empty command line)
        assert wait_for(lambda: other.pid in marked("kernel-ladder-number-given-again"))
        proc = processes.read(other.pid)
        assert processes.end_tree(other.pid, started=proc.started + 1) == []
        assert other.poll() is None, "a process that only shares the number was ended"
        ended = processes.end_tree(other.pid, started=proc.started)
        assert len(ended) == 1 and "kernel-ladder-number-given-again" in ended[0]
        after = processes.read(other.pid)
        assert after is None or not after.alive   # killed (and reaped, where end_tree got to it first)
    finally:
        other.kill()
        other.wait()
