"""5a on a 2-D grid remapped by `tl.swizzle2d`: the grid is (tiles along N, tiles along M), so the
hardware's launch order (axis 0 fastest) is row-major over the tiles, and `tl.swizzle2d` turns it
into column-major order within bands of GROUP_M tile rows. Three autotuned configurations (128 x
256, 256 x 128 and 128 x 128 tiles), pointer blocks computed afresh from k0 at every step.

Independent of the solution: a 2-D grid and Triton's own swizzle instead of the hand-written grouped
order, its own configuration list (the notebook's MATMUL_CONFIGS and TUNED_CONFIGS lines stay as
given, for the 5b cell), and the tile-row/tile-column roles of the grid axes swapped.

Why it should pass: masks on M, N and K; fp32 accumulation; one fp16 rounding. Speed: grouped order,
large tiles and 3-4 stages are what the calibrated solution has (0.876-0.898x torch.mm on an H200;
row-major alone 0.864-0.896x, assets/results/README.md). Measured: 0.889-0.894x
(tests/submissions/correct/_measure.py, in-process, NVIDIA H200, 2026-11-21), 19% above the bar of
0.75x. An earlier version that advanced the pointer blocks along K (as the solution does) measured
0.839-0.871x on the same GPU: recomputing them from k0 is worth 3-4% here.
"""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": r'''
import triton
import triton.language as tl

MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
]
TUNED_CONFIGS = MATMUL_CONFIGS if session.has_gpu else MATMUL_CONFIGS[:1]

SWIZZLE_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "BAND": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "BAND": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "BAND": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=SWIZZLE_CONFIGS if session.has_gpu else SWIZZLE_CONFIGS[2:], key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BAND: tl.constexpr):
    # Axis 0 walks the tile columns and is launched fastest: the launch order is row-major.
    i, j = tl.swizzle2d(tl.program_id(1), tl.program_id(0), tl.num_programs(1), tl.num_programs(0), BAND)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=row_ok & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & col_ok, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(tl.float16), mask=row_ok & col_ok)


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]

    def grid(meta):
        return (triton.cdiv(N, meta["BN"]), triton.cdiv(M, meta["BM"]))

    matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1))
''',
}
EXPECT = {"cells": ["matmul-visible", "matmul-hidden", "matmul-speed"], "device": "cpu"}
