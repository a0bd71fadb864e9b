"""5a's launcher passes A's strides where B's belong (a copy-paste slip: `a.stride(0), a.stride(1)`
twice). A's row stride is K and B's is N, so the kernel is right exactly when K == N, as in a square
product, and wrong otherwise. It must be rejected as a wrong result. It was meant as a kernel that
only the hidden tests catch, but every chapter's visible shapes include a non-square one (here
1024 x 768 x 256 on a GPU, 96 x 160 x 128 on a CPU), so the visible cell already rejects it; the
hidden cell does too."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(notebook_cell(CH05, "matmul-solution"), (CH05_LAUNCH, CH05_LAUNCH.replace(
        "b.stride(0), b.stride(1)", "a.stride(0), a.stride(1)"))),
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
