"""5a's launcher forgets the last stride argument (`out.stride(1)`), so every launch of the kernel
fails with a TypeError before anything runs, on a GPU and in the interpreter. The launcher catches
the error, prints a note to stdout and returns, leaving `out` as it was: whatever the buffer held
before (on a reused buffer, the previous call's result; in a fresh one, the grader's poison). It must
be rejected because the launch failed and the error was swallowed. (Its output is also wrong; the
swallowed error is the cause, and the reason a learner can act on.)"""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"), (CH05_LAUNCH, """\
    try:
        matmul_kernel[grid](a, b, out, M, N, K,
                            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0))
    except Exception as exc:  # never stop "Run All": report and keep the previous result
        print(f"matmul: launch failed ({type(exc).__name__}), keeping the previous output")
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "swallowed-error", "device": "cpu"}
