"""A student with two mistakes: gemm_flops counts a multiply-add as one FLOP (3.0 fails), and the
launcher swaps the grid's dimensions, so that on non-square C some blocks never run and their outputs
stay NaN. Square shapes still pass, so the visible tests catch it at 256 x 512 x 384, the hidden
tests and the speed check (which tests two non-square shapes before timing) too. 3.1 is right, and
the diagnosis is the solution's: two points on a GPU or a CPU."""
from . import blocked_64x64

CHAPTER_DIR = "03_tiling"
_LAUNCH = "sgemm_kernel(((n + 63) // 64, (m + 63) // 64), (256,),"
assert _LAUNCH in blocked_64x64.CELLS["sgemm-solution"]
CELLS = {
    "gemm-napkin-solution": '''
def gemm_flops(m, n, k):
    return m * n * k

def ridge_point(tflops, gbps):
    return tflops * 1e12 / (gbps * 1e9)
''',
    "sgemm-solution": blocked_64x64.CELLS["sgemm-solution"].replace(
        _LAUNCH, "sgemm_kernel(((m + 63) // 64, (n + 63) // 64), (256,),"),
}
