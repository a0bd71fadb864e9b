"""grader.learner.code: a learner's cell read the way IPython reads it, definitions only."""

from __future__ import annotations

import ast
import linecache
import re

import pytest

from conftest import ROOT
from grader.learner import cells
from grader.learner.code import KernelOutcome, as_python, cell_filename, run_cell, statements

SOLUTION_CELLS = [(path, gid, src) for path in sorted((ROOT / "solutions").glob("*/*.ipynb"))
                  for gid, src in cells.learner_cells(path)]


def test_line_and_cell_magics_become_python_with_lines_kept():
    source = "\n\n%time x = 1\n!nvidia-smi\nfiles = !ls\ny = 2\n"
    python = as_python(source)
    assert python.count("\n") == source.count("\n"), "every line keeps its number"
    assert python.splitlines()[5] == "y = 2"
    assert "run_line_magic('time', 'x = 1')" in python and "system('nvidia-smi')" in python
    assert "getoutput('ls')" in python


def test_definitions_run_and_bare_calls_and_shell_lines_do_not():
    ns = {}
    source = ("!nvidia-smi -L\n"
              "%time import math\n"
              "files = !ls\n"
              "calls = []\n"
              "def f(x):\n"
              "    calls.append(x)\n"
              "    return x\n"
              "f(1)\n"
              "%time f(2)\n"
              "%time answer = f(3)\n")
    assert run_cell("c", source, ns) == []
    assert ns["math"].sqrt(4) == 2, "the import inside %time ran"
    assert ns["files"] == [], "`files = !ls` gives an empty list outside a kernel"
    assert ns["answer"] == 3 and ns["calls"] == [3], "bare calls (timed or not) are left out; assignments run"


def test_time_and_capture_cell_magics_run_their_body():
    for magic in ("%%time", "%%capture out"):
        ns = {}
        assert run_cell("c", f"{magic}\nimport math\ndef g():\n    return 5\n", ns) == []
        assert ns["g"]() == 5 and "math" in ns


def test_other_magics_do_nothing():
    ns = {}
    assert run_cell("c", "%matplotlib inline\n%load_ext autoreload\n%autoreload 2\nz = 1\n", ns) == []
    assert ns["z"] == 1
    assert run_cell("c", "%%writefile notes.txt\nw = 1\n", ns) == []
    assert "w" not in ns, "%%writefile's body is a file's text, not code"


def test_functions_keep_their_lines_for_tracebacks_and_triton():
    ns = {}
    source = "\n!echo hi\n%time import os\n\ndef h():\n    raise ValueError('boom')\n"
    assert run_cell("lines", source, ns) == []
    assert ns["h"].__code__.co_firstlineno == 5
    assert ns["h"].__code__.co_filename == cell_filename("lines")
    assert linecache.getline(cell_filename("lines"), 6).strip() == "raise ValueError('boom')"


def test_a_raising_statement_is_reported_and_the_cell_goes_on():
    ns = {}
    problems = run_cell("c", "a = 1\nb = 1 / 0\nc = 3\n", ns)
    assert problems == ["cell c, line 2: ZeroDivisionError: division by zero"]
    assert ns["a"] == 1 and ns["c"] == 3


def test_the_kernels_outcome_decides_what_runs():
    ns = {}
    assert run_cell("c", "a = 1\nb = 1 / 0\nc = 3\n", ns, KernelOutcome("raised", 2)) == []
    assert ns["a"] == 1 and "b" not in ns and "c" not in ns, "the kernel stopped the cell at line 2"
    ns = {}
    problems = run_cell("c", "a = 1\n", ns, KernelOutcome("lost"))
    assert problems and "kernel was lost" in problems[0] and "a" not in ns


def test_a_syntax_error_names_its_line():
    problems = run_cell("c", "a = 1\ndef broken(:\n", {})
    assert len(problems) == 1 and re.match(r"cell c: SyntaxError at line 2: ", problems[0])


def _complete(line: str) -> bool:
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("path,gid,src", SOLUTION_CELLS,
                         ids=[f"{p.parent.name}:{g}" for p, g, _ in SOLUTION_CELLS])
def test_magics_and_shell_lines_change_nothing_in_a_solution_cell(path, gid, src):
    """Every solution cell, with `!nvidia-smi` above it, `%time` in front of its first assignment or
    import, and a timed bare call below, compiles to the same definitions as the cell without them."""
    lines = src.split("\n")
    target = next((i for i, line in enumerate(lines)
                   if re.match(r"(import |from \S+ import |[A-Za-z_][A-Za-z_0-9]* = )", line) and _complete(line)), None)
    timed = list(lines)
    if target is not None:  # some cells hold only functions: the lines around them are the test there
        timed[target] = "%time " + timed[target]
    with_magics = "!nvidia-smi\n" + "\n".join(timed) + "\n%time print('timed')\n!ls"
    without = "#\n" + src + "\n#\n#"
    got = statements(with_magics, "<cell>")
    expected = statements(without, "<cell>")
    assert [(code, line) for code, line in got] == [(code, line) for code, line in expected]
