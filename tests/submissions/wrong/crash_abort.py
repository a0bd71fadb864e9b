"""5a's launcher is the solution's, followed by a sanity check written the C way, with abort(): it
compares `out.stride(0)` with K instead of N, so it fails on every non-square shape and calls
`os.abort()`, killing the process with SIGABRT. (The first CPU shape, 64^3, survives it; the
second does not, nor does the GPU's second, 1024 x 768 x 256.) It must be rejected as a crash of that
one check, with every other cell and notebook still graded."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", "\nimport os\n\n\ndef matmul(a, b, out):"),
        (CH05_LAUNCH, CH05_LAUNCH + """\
    if out.stride(0) != K:  # "can't happen" (it should say N)
        os.abort()
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "crashed", "device": "cpu"}
