"""5a's launcher supports only K a multiple of 64 ("the autotuned tiles need it") and raises a
ValueError for anything else. The visible tests include K = 1000. It must be rejected because the
learner's function raised, with the learner's own line and message quoted."""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("    M, K = a.shape\n    N = b.shape[1]\n", '''\
    M, K = a.shape
    N = b.shape[1]
    if K % 64:
        raise ValueError(f"K = {K} is not a multiple of 64, which the autotuned tiles need")
''')),
}
EXPECT = {"cell": "matmul-visible", "reason": "raised", "device": "cpu", "message": "not a multiple of 64"}
