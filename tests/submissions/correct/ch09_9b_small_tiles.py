"""9b with a smaller tile: 64 x 128 outputs, BLOCK_K = 128, 4 warps, 4 stages, the grid remapped with
tl.swizzle2d (chapter 5's alternative to the grouped order), and B loaded in its own layout as a
(BLOCK_N, BLOCK_K) tile of rows, then transposed for tl.dot (tl.trans). A 128-wide tile of columns lies inside
one 128 x 128 block of B, so its B scale is one number, loaded as a scalar.

Independent of the solution: another tile shape, the swizzled 2-D grid, B's tile transposed in registers, a
scalar B scale, no autotuner.

Why it should pass: zero fill past M, N and K; one tl.dot per scale block on e4m3 tiles (FP8 tensor cores), the
promotion in fp32, one rounding to bf16. Speed: not measured on a GPU yet; smaller tiles mean more programs and
fewer products per byte loaded than the solution's.
"""
CHAPTER_DIR = "09_low_precision"
CELLS = {
    "gemm-solution": r'''
import triton
import triton.language as tl

from grader.chapters import ch09

FP8_CONFIGS = [triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128}, num_warps=4, num_stages=4)]


@triton.jit
def fp8_gemm_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    grid_m, grid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(tl.program_id(0), tl.program_id(1), grid_m, grid_n, 8)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    blocks = tl.cdiv(K, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for j in range(0, blocks):
        kk = j * BLOCK_K + ks
        a = tl.load(a_ptr + rows[:, None].to(tl.int64) * K + kk[None, :],
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        b_rows = tl.load(b_ptr + cols[:, None].to(tl.int64) * K + kk[None, :],
                         mask=(cols[:, None] < N) & (kk[None, :] < K), other=0.0)
        a_scale = tl.load(as_ptr + j * M + rows, mask=rows < M, other=0.0)
        b_scale = tl.load(bs_ptr + (pid_n * BLOCK_N // 128) * blocks + j)
        acc += tl.dot(a, tl.trans(b_rows)) * (a_scale[:, None] * b_scale)
    tl.store(c_ptr + rows[:, None].to(tl.int64) * N + cols[None, :], acc.to(tl.bfloat16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def fp8_gemm(a, a_scale, b, b_scale, out):
    M, K = a.shape
    N = b.shape[0]
    kw = FP8_CONFIGS[0].kwargs
    grid = (triton.cdiv(M, kw["BLOCK_M"]), triton.cdiv(N, kw["BLOCK_N"]))
    fp8_gemm_kernel[grid](a, a_scale, b, b_scale, out, M, N, K, **kw, num_warps=4, num_stages=4)
''',
}
EXPECT = {"cells": ["gemm-visible", "gemm-hidden", "gemm-fp8", "gemm-speed"], "device": "cpu"}
