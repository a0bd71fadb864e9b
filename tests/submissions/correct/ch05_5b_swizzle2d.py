"""5b on a 2-D grid remapped by `tl.swizzle2d` (the design of ch05_5a_swizzle2d.py), with the epilogue
on the fp32 accumulator: + bias, then GELU (tanh form) through the identity 0.5 x (1 + tanh u) = x /
(1 + exp(-2u)), computed with exp2, and one fp16 store. Three configurations of its own.

Independent of the solution: a 2-D grid with Triton's swizzle, pointer blocks advanced along K, a
base-2 exponential, and its own meta-parameter names and configuration list.

Why it should pass: x / (1 + 2^(-2u log2 e)) is exact algebra for the tanh form; for very negative u the
exponential overflows to +inf in fp32 and the quotient becomes -0.0 or a tiny value, which is the right
limit; fp32 throughout, one rounding. Speed: the calibrated fused solution measured 1.443-1.470x torch
eager on an H200 at 8192 x 8192 x 1024 (assets/results/README.md); this has the same per-tile work.
Measured (tests/submissions/correct/_measure.py, in-process): 1.490x (2 timed runs, NVIDIA H200,
2026-11-21); 1.490-1.517x (3 runs, NVIDIA H100 80GB HBM3, 2026-11-25,
assets/results/exploits/gpu-suite-h100), 15% above sm_90's bar of 1.3x (1.1x elsewhere).
"""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "fused-solution": r'''
EPILOGUE_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "BAND": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "BAND": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "BAND": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=EPILOGUE_CONFIGS if session.has_gpu else EPILOGUE_CONFIGS[2:], key=["M", "N", "K"])
@triton.jit
def gemm_bias_gelu_swizzled(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BAND: tl.constexpr):
    i, j = tl.swizzle2d(tl.program_id(1), tl.program_id(0), tl.num_programs(1), tl.num_programs(0), BAND)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_blk = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_blk = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BK)):
        left = K - step * BK
        a = tl.load(a_blk, mask=row_ok & (ks[None, :] < left), other=0.0)
        b = tl.load(b_blk, mask=(ks[:, None] < left) & col_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        a_blk += BK * stride_ak
        b_blk += BK * stride_bk

    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    x = acc + bias[None, :]
    two_u = 1.5957691216057308 * x * (1.0 + 0.044715 * x * x)   # 2u, u = sqrt(2/pi) (x + 0.044715 x^3)
    y = x / (1.0 + tl.exp2(-1.4426950408889634 * two_u))         # exp(-2u) = 2^(-2u log2 e)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, y.to(tl.float16), mask=row_ok & col_ok)


def matmul_bias_act(a, b, bias, out):
    M, K = a.shape
    N = b.shape[1]

    def grid(meta):
        return (triton.cdiv(N, meta["BN"]), triton.cdiv(M, meta["BM"]))

    gemm_bias_gelu_swizzled[grid](a, b, bias, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                  out.stride(0), out.stride(1))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "cpu"}
