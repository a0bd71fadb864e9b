"""5a's launcher "preconditions" its inputs: a Triton kernel of its own halves `a` in place (to keep
the fp16 partial sums small), the solution's kernel multiplies, and another kernel doubles `out`. The
product comes out right (halving and doubling are exact in fp16 away from the extremes), and no torch
operation touches the grader's tensors. It must be rejected because it changed an input: the grader's
pristine copy of `a` differs afterwards."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", '''

@triton.jit
def scale_kernel(x_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, (x * factor).to(x.dtype), mask=mask)


def matmul(a, b, out):'''),
        (CH05_LAUNCH, "    scale_kernel[(triton.cdiv(a.numel(), 1024),)](a, a.numel(), 0.5, BLOCK=1024)\n" + CH05_LAUNCH
         + "    scale_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), 2.0, BLOCK=1024)\n")),
}
EXPECT = {"cell": "matmul-visible", "reason": "input-modified", "device": "cpu"}
