"""grader.cuda.launches: the one registry every launch passes through. Handlers nest, the last pushed
sees a launch first, each may run, skip or replace it; Triton's classes are wrapped without importing
Triton."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grader.cuda import launches


def _launch(name="k", log=None):
    return launches.Launch("cuda", name, None, lambda: (log.append(("ran", name)) if log is not None else None) or name)


def test_without_handlers_a_launch_runs():
    log = []
    assert launches.dispatch(_launch("k", log)) == "k" and log == [("ran", "k")]


def test_handlers_nest_last_pushed_first():
    log = []

    def outer(launch):
        log.append(("outer", launch.name))
        return launch.proceed()

    def inner(launch):
        log.append(("inner", launch.name, launches.depth()))
        return launch.proceed()

    with launches.intercept(outer), launches.intercept(inner):
        assert launches.dispatch(_launch("k", log)) == "k"
    assert log == [("inner", "k", 1), ("outer", "k"), ("ran", "k")]
    assert launches.depth() == 0
    log.clear()
    launches.dispatch(_launch("after", log))
    assert log == [("ran", "after")], "handlers are gone after their block"


def test_a_handler_may_skip_or_replace_a_launch():
    log = []
    with launches.intercept(lambda launch: "skipped"):
        assert launches.dispatch(_launch("k", log)) == "skipped"
    assert log == []


def test_a_handler_that_raises_leaves_the_stack_clean():
    def boom(launch):
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        with launches.intercept(boom):
            launches.dispatch(_launch())
    assert launches.depth() == 0 and launches._HANDLERS == []


def test_a_launch_inside_a_launch_counts_depth():
    seen = []

    def handler(launch):
        seen.append((launch.name, launches.depth()))
        return launch.proceed()

    outer = launches.Launch("autotune", "tuner", None, lambda: launches.dispatch(_launch("inner")))
    assert not outer.is_kernel
    with launches.intercept(handler):
        launches.dispatch(outer)
    assert seen == [("tuner", 1), ("inner", 2)]


def test_the_registry_never_imports_triton():
    code = ("import sys\nfrom grader.cuda import launches\n"
            "with launches.intercept(lambda l: l.proceed()):\n    pass\n"
            "assert 'triton' not in sys.modules, 'imported triton'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_triton_launches_pass_through_the_registry_in_the_interpreter():
    code = r'''
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from grader.cuda import launches

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

@triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n"])
@triton.jit
def add_two(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)

x = torch.zeros(10)
seen = []
def note(launch):
    seen.append((launch.kind, launch.name))
    return launch.proceed()
with launches.intercept(note):
    add_one[(1,)](x, 10, BLOCK=16)
    add_two[(1,)](x, 10)
with launches.intercept(lambda launch: None if launch.is_kernel else launch.proceed()):
    add_one[(1,)](x, 10, BLOCK=16)          # skipped
assert x.tolist() == [3.0] * 10, x
assert seen[0] == ("triton", "add_one"), seen
assert ("autotune", "add_two") in seen and ("triton", "add_two") in seen, seen
print("ok")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
