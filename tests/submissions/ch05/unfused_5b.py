"""5b as the learner's 5a matmul followed by two kernels of their own, in place on `out`: one adds the
bias, the next applies GELU. Correct, and exactly torch eager's memory traffic (the M x N result goes
to memory three times), so it must miss 5b's speed bar every time. On an H200 it clears 1.1x eager
(1.149-1.172x; 1.031-1.042x on an H100: assets/results/calibration/ch05-5b-sm90), which is why sm_90's bar is 1.3.
Every kernel is the learner's own: torch computing the epilogue would be `library-compute` instead.
Everything else is the solution."""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "fused-solution": r'''
@triton.jit
def add_bias_kernel(c_ptr, bias_ptr, M, N, stride_cm, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(c_ptr + row * stride_cm + cols, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + row * stride_cm + cols, (x + bias).to(tl.float16), mask=mask)


@triton.jit
def gelu_kernel(c_ptr, M, N, stride_cm, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(c_ptr + row * stride_cm + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    tl.store(c_ptr + row * stride_cm + cols, y.to(tl.float16), mask=mask)


def matmul_bias_act(a, b, bias, out):
    matmul(a, b, out)
    M, N = out.shape
    grid = (M, triton.cdiv(N, 1024))
    add_bias_kernel[grid](out, bias, M, N, out.stride(0), BLOCK=1024)
    gelu_kernel[grid](out, M, N, out.stride(0), BLOCK=1024)
''',
}
