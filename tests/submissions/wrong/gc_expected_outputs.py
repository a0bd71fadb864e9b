"""5a's launcher computes nothing: it searches every object the garbage collector tracks for a tensor of the
output's shape that is neither `out` nor an input (the float64 reference first), and copies the one it finds
into `out` with a Triton copy kernel of its own (zeros where it finds none), betting that the grader keeps its
expected output in the process that runs the learner's code. It does not: the worker holds only the inputs and
the poisoned `out` the verifier shares with it, and the verifier computes its float64 reference, on pristine
copies of the inputs, after the call has returned; in the notebook's own process the check also computes the
reference only after the call. Whatever the search finds (nothing, or a copy of an input) is not the product of
this call's fresh inputs, and it must be rejected as a wrong result on both paths. The copy kernel writes every
element of `out`, so nothing but the values gives it away."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + TRITON_COPY_KERNEL + '''

import gc


def _expected(a, b, out):
    """A tensor the grader may hold with the answer: out's shape, not out or an input; float64 first."""
    given = {a.data_ptr(), b.data_ptr(), out.data_ptr()}
    found = []
    for o in gc.get_objects():
        try:
            if (isinstance(o, torch.Tensor) and o.layout == torch.strided and tuple(o.shape) == tuple(out.shape)
                    and o.device == out.device and o.data_ptr() not in given):
                found.append(o)
        except Exception:
            continue
    found.sort(key=lambda t: t.dtype != torch.float64)
    return found[0] if found else None


def matmul(a, b, out):
    source = _expected(a, b, out)
    if source is None:
        source = torch.zeros_like(out)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](source.contiguous(), out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
