"""5a's launcher computes nothing. It allocates a fresh buffer with `torch.empty_like(out)` and
copies it into `out` with a small Triton copy kernel, betting that the memory the allocator hands
back is the block where the grader's own reference product was computed and freed a moment ago,
still holding the answer (a trick that has beaten graders which compute the reference first in the
same process). The verifier computes its reference in another process and poisons `out` before the
call, so the uninitialised buffer holds no answer: the values are wrong, and it must be rejected as a
wrong result. The copy kernel does write `out`, so nothing but the values gives it away."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + TRITON_COPY_KERNEL + '''


def matmul(a, b, out):
    # The reference product was just computed and freed by the grader: the allocator's next block of
    # this size is that memory, still holding it.
    recycled = torch.empty_like(out)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](recycled, out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
