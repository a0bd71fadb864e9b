"""5a's launcher zeroes both inputs in place and then runs the solution's kernel, which writes 0 @ 0 =
0 into `out`. A grader that computes its reference from the same tensors after the call compares zeros
with zeros and passes it. It must be rejected because it changed its inputs: the verifier keeps a
pristine copy, checks the inputs afterwards, and reports that before comparing values (against the
pristine reference the zeros are wrong too)."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"), (CH05_LAUNCH, """\
    a.zero_()  # the reference, if computed from these after the call, is then all zeros as well
    b.zero_()
""" + CH05_LAUNCH)),
}
EXPECT = {"cell": "matmul-visible", "reason": "input-modified", "device": "cpu"}
