"""5a's launcher does the whole product when the grader checks a call, and half of it when the call is
timed: it looks for `run_batch` on the stack (the grader's timed batches, which it has read) and then
runs the K loop over half the chunks and doubles the result, twice as fast and wrong. The grader
re-checks a sample of timed calls in full, always after the first batch, with a choice the learner's
code cannot see: it must be rejected as a wrong result, on both paths."""
from submissions.wrong import CH05, CH05_LAUNCH, FIND_TIMED_BATCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", FIND_TIMED_BATCH + '''


def matmul(a, b, out):'''),
        (CH05_LAUNCH, '''\
    if _timed_batch() is not None:   # nobody checks these: half the K loop, doubled
        half = (K // 2) // 64 * 64 or K
        matmul_kernel[grid](a, b, out, M, N, half,
                            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
        return
''' + CH05_LAUNCH)),
}
EXPECT = {"cell": "matmul-speed", "reason": "wrong-result", "device": "gpu"}
