"""9a with a different tile: 64 rows of one group a program, 8 warps, the scales of the block stored with one
vector store. A NaN is found by counting NaNs in each row of the tile (tl.sum of x != x) and makes that row's
scale NaN; an infinity makes it inf through the amax itself.

Independent of the solution: 64-row blocks instead of 16, NaN detected by a count instead of mapped to inf in the
max, the row offsets in 32-bit arithmetic with the row stride passed in.

Why it should pass: masks on M and K with zero fill; the reference's arithmetic (tl.div_rn, the fp8 cast's round
half to even). Speed: one pass; fewer, longer programs than the solution's. Not measured on a GPU yet.
"""
CHAPTER_DIR = "09_low_precision"
CELLS = {
    "quantize-solution": r'''
import triton
import triton.language as tl

from grader.chapters import ch09


@triton.jit
def quantize_kernel(x_ptr, codes_ptr, scales_ptr, M, K, stride_row, BLOCK_M: tl.constexpr, GROUP: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    g = tl.program_id(1)
    cols = g * GROUP + tl.arange(0, GROUP)
    keep = (rows[:, None] < M) & (cols[None, :] < K)
    where = rows[:, None].to(tl.int64) * stride_row + cols[None, :]
    x = tl.load(x_ptr + where, mask=keep, other=0.0).to(tl.float32)
    nans = tl.sum((x != x).to(tl.int32), axis=1)
    amax = tl.max(tl.abs(x), axis=1)
    scale = tl.div_rn(tl.maximum(amax, 1e-4), 448.0)
    scale = tl.where(nans > 0, float("nan"), scale)
    q = tl.div_rn(x, scale[:, None])
    q = tl.minimum(tl.maximum(q, -448.0), 448.0)
    tl.store(codes_ptr + where, q.to(tl.float8e4nv), mask=keep)
    tl.store(scales_ptr + g * M + rows, scale, mask=rows < M)


def quantize(x, codes, scales):
    M, K = x.shape
    grid = (triton.cdiv(M, 64), triton.cdiv(K, ch09.GROUP))
    quantize_kernel[grid](x, codes, scales, M, K, x.stride(0), BLOCK_M=64, GROUP=ch09.GROUP, num_warps=8)
''',
}
EXPECT = {"cells": ["quantize-visible", "quantize-hidden", "quantize-speed"], "device": "cpu"}
