"""7b, fused residual add + RMSNorm with several rows per program: a 2-D block of ROWS x BLOCK elements,
each row of it read once, added in fp32, stored as the new residual, normalised with `tl.rsqrt` and
stored again. The weight is loaded once per program and shared by its rows; rows past the end are masked.
Two rows a program at the speed size's 4,096 columns (8,192 programs), more for short rows.

Independent of the solution: a 2-D tile of rows instead of one row per program, rsqrt instead of
1 / sqrt, its own warp choice and names.

Why it should pass: every element is read once and written twice, the fused kernel's traffic, in fp32
until the two stores (fp16, or bf16 when the check runs bf16). Speed: the same bytes as the solution,
6.53-6.57x torch eager on an H100 (bars.toml "7b", 6.0x bar, 8-9% margin); not yet measured on a GPU:
test_exploits.py -k ch07_7b_row_pairs there says.
"""
CHAPTER_DIR = "07_reductions"
CELLS = {
    "norm-solution": r'''
import triton
import triton.language as tl

from grader.chapters import ch07


@triton.jit
def add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, n_rows, hidden, eps,
                       ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    col = tl.arange(0, BLOCK)
    keep = (row[:, None] < n_rows) & (col[None, :] < hidden)
    at = row[:, None].to(tl.int64) * hidden + col[None, :]
    total = tl.load(x_ptr + at, mask=keep, other=0.0).to(tl.float32) + tl.load(res_ptr + at, mask=keep, other=0.0).to(tl.float32)
    tl.store(res_out_ptr + at, total.to(res_out_ptr.dtype.element_ty), mask=keep)
    inv_rms = tl.rsqrt(tl.sum(total * total, axis=1) / hidden + eps)
    gain = tl.load(w_ptr + col, mask=col < hidden, other=0.0).to(tl.float32)
    tl.store(out_ptr + at, (total * inv_rms[:, None] * gain[None, :]).to(out_ptr.dtype.element_ty), mask=keep)


def add_rmsnorm(x, residual, weight, out, residual_out):
    n_rows, hidden = x.shape
    width = triton.next_power_of_2(hidden)
    rows_each = max(1, min(8, 8192 // width))     # about 8,192 elements a program
    warps = 8 if width * rows_each >= 8192 else 4
    add_rmsnorm_kernel[(triton.cdiv(n_rows, rows_each),)](x, residual, weight, out, residual_out, n_rows, hidden,
                                                          ch07.RMS_EPS, ROWS=rows_each, BLOCK=width, num_warps=warps)
''',
}
EXPECT = {"cells": ["norm-visible", "norm-hidden", "norm-speed"], "device": "cpu"}
