"""`ladder check` on a machine with no GPU: the pipeline runs, grades what a CPU can grade, and says
"no GPU" clearly instead of crashing. (On a GPU, tests/notebooks/test_notebooks_gpu.py covers the full verdicts.)"""

import pytest

from conftest import HAS_GPU, ROOT, ladder_check

pytestmark = [pytest.mark.slow, pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; test_notebooks_gpu.py covers GPUs")]


@pytest.mark.parametrize("graded_solution", ["01_vector_add"], indirect=True)
def test_solution_notebook_on_cpu_passes_napkin_cells_and_reports_no_gpu(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    assert cells["napkin-test"]["passed"] and cells["fusion-napkin-test"]["passed"]
    assert cells["diagnose-test"]["passed"]
    gpu_cells = [c for gid, c in cells.items() if "napkin" not in gid and gid != "diagnose-test"]
    assert gpu_cells
    for c in gpu_cells:
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NoGPUError", c
        assert "no GPU found" in c["error"]["evalue"]
        assert "compile for sm_80 and sm_90" in c["error"]["evalue"], "the CPU path must still compile-check"
        assert "Traceback" not in c["error"]["evalue"]
    assert nb["score"] == 3 and nb["max_score"] == sum(c["max_points"] for c in nb["cells"])


def test_released_notebook_fails_every_graded_cell_with_not_implemented():
    code, report = ladder_check(ROOT / "course/01_vector_add/01_vector_add.ipynb")
    assert code == 1 and report["schema"] == "kernel-ladder.check/1" and report["passed"] is False
    (nb,) = report["notebooks"]
    assert nb["cells"] and nb["score"] == 0
    for c in nb["cells"]:
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]
