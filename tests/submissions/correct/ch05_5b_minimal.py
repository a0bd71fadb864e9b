"""5b, the textbook-minimal fused kernel: the 5a grouped matmul (1-D grid, two autotuned configurations
of its own), then, on the fp32 accumulator, + bias and GELU in its tanh form, 0.5 x (1 + tanh(u))
with u = sqrt(2/pi) (x + 0.044715 x^3), and a single fp16 store. tanh is built from exp on -2|u| (so
nothing overflows) and its sign restored.

Independent of the solution: its own configuration list (FUSED_CONFIGS, two entries), the grouped
order written from the band index, pointers recomputed from the loop index, and the tanh written out
rather than the sigmoid identity.

Why it should pass: the epilogue runs in fp32 on the accumulator and rounds once; 1 + tanh(u) loses
relative accuracy only where it is small, and there the absolute error of 0.5 x (1 + tanh u) stays near
1e-7 |x|, far inside atol = 1e-3. Speed: the calibration rung "5b fused bias + GELU epilogue (solution)"
is this design with four configurations, 1.443-1.470x torch eager on an H200 at 8192 x 8192 x 1024
(assets/results/README.md). Measured (tests/submissions/correct/_measure.py, in-process): 1.448x (2
timed runs, NVIDIA H200, 2026-11-21); 1.468-1.490x (3 runs, NVIDIA H100 80GB HBM3, 2026-11-25,
assets/results/exploits/gpu-suite-h100), 13% above sm_90's bar of 1.3x (1.1x elsewhere).
"""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "fused-solution": r'''
FUSED_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=FUSED_CONFIGS if session.has_gpu else FUSED_CONFIGS[1:], key=["M", "N", "K"])
@triton.jit
def matmul_bias_gelu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_band = GROUP_M * tiles_n
    band = pid // in_band
    m_first = band * GROUP_M
    band_rows = tl.minimum(tiles_m - m_first, GROUP_M)
    local = pid - band * in_band
    tile_m = m_first + local % band_rows
    tile_n = local // band_rows

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)

    x = acc + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)       # sqrt(2 / pi) = 0.79788...
    e = tl.exp(-2.0 * tl.abs(u))                               # in (0, 1]: never overflows
    t = (1.0 - e) / (1.0 + e)                                  # tanh(|u|)
    t = tl.where(u < 0, -t, t)
    y = 0.5 * x * (1.0 + t)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, y.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_bias_act(a, b, bias, out):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_bias_gelu_kernel[grid](a, b, bias, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                  out.stride(0), out.stride(1))
''',
}
EXPECT = {"cells": ["fused-visible", "fused-hidden", "fused-speed"], "device": "cpu"}
