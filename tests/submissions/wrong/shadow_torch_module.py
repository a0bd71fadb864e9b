"""5a's kernel scales its product by 1.5 before the store (a wrong result), and its cell writes a `torch.py` and
a `triton.py` into the folder the notebook runs in. Python puts the folder a process starts in (`python -m`,
`python -c`) or its script's folder first on the import path, so a grader's process started there after the
cell ran would import the student's module in place of torch or Triton, and run the student's code before its
own checks: had the grader's fork server been started in the notebook's folder (`ladder check --isolated` run
there), every verifier forked from it would have. Each module, if imported, notes the process that imported it
in `shadow-imports.txt` beside itself and then loads the real package in its place. The grader's processes
import nothing from the folder they start in (PYTHONSAFEPATH, grader.isolation.isolate), and the verifier and
the worker have imported torch before any learner code runs, so the wrong product is judged as it is on both
paths; tests/isolation/test_containment.py runs `ladder check --isolated` in the notebook's own folder and
finds no `shadow-imports.txt`."""
from submissions.wrong import CH05, edited, notebook_cell

# What the cell writes, as torch.py and as triton.py: note the importer, then hand over to the real package.
SHADOW = '''
import os, sys
_here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_here, "shadow-imports.txt"), "a") as _f:
    _f.write(f"{__name__} imported by pid {os.getpid()}: {sys.argv}\\n")
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
del sys.modules[__name__]
sys.modules[__name__] = __import__(__name__)
'''

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("tl.store(c_ptrs, acc.to(tl.float16), mask=in_m & in_n)",
         "tl.store(c_ptrs, (acc * 1.5).to(tl.float16), mask=in_m & in_n)"),
        ("\n\ndef matmul(a, b, out):", f'''

# For a later process started in this folder to import in place of torch and Triton.
for _name in ("torch.py", "triton.py"):
    with open(_name, "w") as _f:
        _f.write({SHADOW!r})


def matmul(a, b, out):''')),
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
