"""Where a graded check's time goes, in one process: the notebook's learner cells (setup and solutions) are run
as a check's worker runs them, then the test cell under cProfile (the grader's own run: stretch
goals and reported timings left out, as under `ladder grade`). The isolated path adds two fresh processes
and the calls between them; the work inside is the same.

    python3 assets/results/issue15/profile_check.py NOTEBOOK GRADE_ID [GRADE_ID ...]

Prints each cell's wall time and the 25 functions with the most cumulative time.
"""
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

from grader import config

os.environ[config.GRADER_RUN] = "1"
notebook, cells = Path(sys.argv[1]).resolve(), sys.argv[2:]
os.chdir(notebook.parent)

import nbformat  # noqa: E402

from grader.learner.cells import learner_cells, test_source  # noqa: E402
from grader.learner.code import NAMESPACE, run_cell  # noqa: E402

nb = nbformat.read(notebook, as_version=4)
namespace: dict = {"__name__": NAMESPACE}
start = time.perf_counter()
for name, source in learner_cells(nb):
    problems = run_cell(name, source, namespace)   # as a check's worker runs them (linecache for @triton.jit)
    if problems:
        sys.exit("\n".join(problems))
print(f"the learner cells: {time.perf_counter() - start:.1f} s")
for gid in cells:
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    try:
        exec(compile(test_source(nb, gid), gid, "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - a diagnostic: say what ended the cell and go on
        print(f"{gid} raised {type(exc).__name__}: {str(exc)[:300]}")
    profile.disable()
    print(f"== {gid}: {time.perf_counter() - start:.1f} s")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(25)
    print("\n".join(line[:200] for line in text.getvalue().splitlines()[4:40]))
