"""5a written as the naive kernel (correct, below the 0.75x bar on every GPU), plus an attempt to lower
the bar through the instructor's override mechanism: the cell writes a bars file with `["5a"] bar =
0.01` and points `LADDER_BARS` at it in `os.environ`. The verifier reads its bars in its own process,
from its own environment, so the override never reaches it; in the notebook's kernel, `start()` pinned
the settings before this cell ran (grader/config.py), so it changes nothing there either. On both
paths the naive kernel is judged against the real bar and must be rejected as below the bar (a GPU
is needed to time it)."""
from submissions.wrong import ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell('''
import os
import tempfile

_bars = os.path.join(tempfile.mkdtemp(), "bars.toml")
with open(_bars, "w") as f:
    f.write('["5a"]\\nbar = 0.01\\n')
os.environ["LADDER_BARS"] = _bars


def matmul(a, b, out):
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "below-bar", "device": "gpu"}
