"""7b's previous rung: the same Triton kernels with the fusion taken out: an add kernel writes the
residual sum, then a norm kernel reads it back. Correct everywhere; it moves one more read of the matrix
than the fused kernel (5 passes instead of 4: the sum it writes, the fused kernel writes too). It misses the
7b bar on an H100 (assets/results/calibration/ch07-h100) but clears it on an H200 (calibration/course-h200x4), so
grading fails it by its two launches a call (`not-fused`) on every GPU. Everything else is the solution."""
CHAPTER_DIR = "07_reductions"
CELLS = {
    "norm-solution": '''
import triton
import triton.language as tl

from grader.chapters import ch07


@triton.jit
def add_kernel(x_ptr, res_ptr, res_out_ptr, hidden, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * hidden
    cols = tl.arange(0, BLOCK)
    inside = cols < hidden
    r = (tl.load(x_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
         + tl.load(res_ptr + start + cols, mask=inside, other=0.0).to(tl.float32))
    tl.store(res_out_ptr + start + cols, r.to(res_out_ptr.dtype.element_ty), mask=inside)


@triton.jit
def rmsnorm_kernel(r_ptr, w_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * hidden
    cols = tl.arange(0, BLOCK)
    inside = cols < hidden
    r = tl.load(r_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
    scale = 1.0 / tl.sqrt(tl.sum(r * r, axis=0) / hidden + eps)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + start + cols, (r * scale * w).to(out_ptr.dtype.element_ty), mask=inside)


def add_rmsnorm(x, residual, weight, out, residual_out):
    rows, hidden = x.shape
    block = triton.next_power_of_2(hidden)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    add_kernel[(rows,)](x, residual, residual_out, hidden, BLOCK=block, num_warps=warps)
    rmsnorm_kernel[(rows,)](residual_out, weight, out, hidden, ch07.RMS_EPS, BLOCK=block, num_warps=warps)
''',
}
