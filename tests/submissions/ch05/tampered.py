"""A student who tampers with the tests: napkin math that forgets the add (M*N*K FLOPs) and a grouped
order that is plain row-major, then the 5.0 test cell deleted and the 5.1 test cell's check replaced
by `pass`. Graded on the original tests, both cells fail. The kernels are the solution's: 13 of 15 on
a GPU."""
from submissions.ch05 import edited, notebook_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "napkin-solution": edited(notebook_cell("napkin-solution"), ("return 2 * m * n * k", "return m * n * k")),
    "grouped-solution": """
def grouped_tile(pid, grid_m, grid_n, group_m):
    return pid // grid_n, pid % grid_n
""",
}


def tamper(nb: dict) -> None:
    cells = nb["cells"]
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells]
    del cells[ids.index("napkin-test")]
    for cell in cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "grouped-test":
            cell["source"] = "pass  # tests removed by the student\n"
