"""The naive rung of 8b: the same block, with the fusions taken out of the learner's kernels. The
MLP's first matmul is the 5a matmul followed by a bias + GELU kernel, and each add_rmsnorm is an add
kernel followed by an RMSNorm kernel that reads the sum back. Every kernel is the learner's own and the
block is correct; it moves what torch eager's glue moves, less the fp32 round trips, so it must miss
the 8b bar (calibrated in assets/results/calibration/ch08-h100). Everything else is the solution."""
from submissions.ch07.unfused_7b import CELLS as CELLS_7
from submissions.ch08 import notebook_cell

CHAPTER_DIR = "08_should_you_write_it"
# The norm as chapter 7's unfused rung writes it: an add kernel, then a norm kernel that reads the sum back.
_UNFUSED_NORM = CELLS_7["norm-solution"]
_UNFUSED_EPILOGUE = r'''
@triton.jit
def bias_gelu_kernel(c_ptr, bias_ptr, N, stride_cm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(c_ptr + row * stride_cm + cols, mask=inside, other=0.0).to(tl.float32)
    x += tl.load(bias_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    tl.store(c_ptr + row * stride_cm + cols, y.to(tl.float16), mask=inside)


def matmul_bias_act(a, b, bias, out):
    matmul(a, b, out)
    M, N = out.shape
    bias_gelu_kernel[(M, triton.cdiv(N, 1024))](out, bias, N, out.stride(0), BLOCK=1024)
'''
_MATMUL_ONLY = notebook_cell("matmul-paste")
CELLS = {
    "matmul-paste": _MATMUL_ONLY[:_MATMUL_ONLY.index("@triton.autotune(configs=TUNED_CONFIGS, key=[\"M\", \"N\", \"K\"])\n"
                                                      "@triton.jit\ndef matmul_bias_gelu_kernel")] + _UNFUSED_EPILOGUE,
    "norm-paste": _UNFUSED_NORM,
}
