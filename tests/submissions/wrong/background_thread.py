"""5a's launcher hands the launch to a worker thread (a module-level ThreadPoolExecutor) and returns
at once, so a timer around the call measures almost nothing; the kernel itself is the solution's and
computes the right values, a little later. It must be rejected because the learner's code left a
thread running after the call returned (the pool's thread, started by the first call, stays alive
for good): the verifier checks for such threads as soon as the call returns, before it reads `out`."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", """
from concurrent.futures import ThreadPoolExecutor

_launcher = ThreadPoolExecutor(max_workers=1)  # one background thread does the launching


def matmul(a, b, out):"""),
        (CH05_LAUNCH, """\
    _launcher.submit(matmul_kernel[grid], a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                     b.stride(1), out.stride(0), out.stride(1))  # returns at once
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "stray-thread", "device": "cpu"}
