"""5a's launcher is the solution's, then ends the process with `os._exit(0)`: no exception, no
signal, exit status 0, and nothing sent back. A grader that trusts a clean exit, or reads "no
failure reported" as a pass, would pass it. It must be rejected as a crash (the check ended without a
verdict), with every other cell and notebook still graded."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", "\nimport os\n\n\ndef matmul(a, b, out):"),
        (CH05_LAUNCH, CH05_LAUNCH + "    os._exit(0)\n")),
}
EXPECT = {"cell": "matmul-visible", "reason": "crashed", "device": "cpu"}
