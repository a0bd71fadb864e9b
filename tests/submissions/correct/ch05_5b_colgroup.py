"""5b grouped by tile columns (the order of ch05_5a_colgroup.py: bands of GROUP_N tile columns, walked
along each tile row), with the epilogue on the fp32 accumulator: + bias, GELU in its tanh form with
tanh(u) = 1 - 2 / (exp(2u) + 1), one fp16 store. Three configurations of its own.

Independent of the solution: column bands, its own meta-parameter names and configurations, and a
third way of writing tanh. Each program loads the bias block for its columns once.

Why it should pass: for large u, exp(2u) overflows to +inf and 2 / inf = 0 gives tanh = 1; for very
negative u, exp(2u) underflows to 0 and tanh = -1: both right limits. Elsewhere the formula is exact up
to fp32 rounding. fp32 throughout, one rounding to fp16. Speed: the same per-tile work as the calibrated
fused solution, 1.443-1.470x torch eager on an H200 at 8192 x 8192 x 1024 (assets/results/README.md),
and at that square output grouping by columns reuses as much as by rows. Measured
(tests/submissions/correct/_measure.py, in-process): 1.460x (2 timed runs, NVIDIA H200, 2026-11-21);
1.488-1.522x (3 runs, NVIDIA H100 80GB HBM3, 2026-11-25, assets/results/exploits/gpu-suite-h100),
14% above sm_90's bar of 1.3x (1.1x elsewhere).
"""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "fused-solution": r'''
COLUMN_EPILOGUE_CONFIGS = [
    triton.Config({"TM": 128, "TN": 256, "TK": 64, "GROUP_N": 8}, num_warps=8, num_stages=3),
    triton.Config({"TM": 256, "TN": 128, "TK": 64, "GROUP_N": 8}, num_warps=8, num_stages=3),
    triton.Config({"TM": 128, "TN": 128, "TK": 64, "GROUP_N": 4}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=COLUMN_EPILOGUE_CONFIGS if session.has_gpu else COLUMN_EPILOGUE_CONFIGS[2:],
                 key=["M", "N", "K"])
@triton.jit
def gemm_bias_gelu_by_columns(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                              stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                              TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr, GROUP_N: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, TN)
    m_tiles = tl.cdiv(M, TM)
    per_band = GROUP_N * m_tiles
    first_n = (pid // per_band) * GROUP_N
    width = tl.minimum(n_tiles - first_n, GROUP_N)
    pos = pid % per_band
    tn = first_n + pos % width
    tm = pos // width

    offs_m = tm * TM + tl.arange(0, TM)
    offs_n = tn * TN + tl.arange(0, TN)
    offs_k = tl.arange(0, TK)
    pa = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    pb = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((TM, TN), dtype=tl.float32)
    for k0 in range(0, K, TK):
        a = tl.load(pa, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(pb, mask=(offs_k[:, None] + k0 < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        pa += TK * stride_ak
        pb += TK * stride_bk

    x = acc + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    u = 0.7978845608028654 * x + 0.035677408136300125 * x * x * x   # sqrt(2/pi) (x + 0.044715 x^3)
    tanh_u = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)
    y = 0.5 * x * (1.0 + tanh_u)
    pc = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(pc, y.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_bias_act(a, b, bias, out):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["TM"]) * triton.cdiv(N, meta["TN"]),)  # noqa: E731
    gemm_bias_gelu_by_columns[grid](a, b, bias, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                    out.stride(0), out.stride(1))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "cpu"}
