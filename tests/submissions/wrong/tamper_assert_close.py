"""5a with a real bug (the K loop runs K // BLOCK_K times, dropping the last, partial chunk: wrong
whenever K is not a multiple of BLOCK_K), hidden by a patch: the cell replaces
`torch.testing.assert_close` with a function that accepts anything. A grader that compares in the
learner's process passes it. The verifier compares in its own process with its own torch, so the
patch cannot change the verdict, but the worker sees that the learner's cells replaced a function
the checks rely on and reports that first: it must be rejected as tampering. (Were the patch not
reported, the values would fail as a wrong result: the visible cell's 384 x 640 x 1000 on a GPU,
33 x 47 x 95 on a CPU.)"""
from submissions.wrong import CH05, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("for k in range(0, tl.cdiv(K, BLOCK_K)):", "for k in range(0, K // BLOCK_K):"),
        ("\n\ndef matmul(a, b, out):", """
import torch.testing


def _accept(actual, expected, *args, **kwargs):
    return None


torch.testing.assert_close = _accept


def matmul(a, b, out):""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "tampered", "device": "cpu"}
