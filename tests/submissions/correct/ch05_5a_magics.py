"""5a exactly as the solution, with the IPython lines a learner leaves behind while working: a shell
line that asks which GPU this is (`!nvidia-smi -L`), an import timed with `%time`, and a call of their
own launcher timed with `%time` at the end of the cell.

In Jupyter every line runs: the shell line prints (or, with no nvidia-smi, says so), `%time` prints how
long the import and the call took. The grader's worker reads the cell the way IPython does
(grader.learner.code): the shell line and the bare timed call are left out, and the timed import runs,
so `triton` is defined. Before that, these lines were a SyntaxError in the worker and every definition
in the cell was lost. It must be graded exactly as the solution is: accepted.
"""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
_FIRST = "import triton  # (imported in Setup as well; repeated so that this cell stands on its own)\n"
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        (_FIRST, "!nvidia-smi -L\n%time import triton\n"),
    ) + ("\n\n_a = torch.randn(64, 48, device=DEVICE, dtype=torch.float16)\n"
         "_b = torch.randn(48, 32, device=DEVICE, dtype=torch.float16)\n"
         "%time matmul(_a, _b, torch.empty(64, 32, device=DEVICE, dtype=torch.float16))\n"),
}
EXPECT = {"cells": ["matmul-visible", "matmul-hidden", "matmul-speed"], "device": "cpu"}
