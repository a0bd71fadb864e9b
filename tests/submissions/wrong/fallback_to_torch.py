"""5a's kernel has a shape bug: A's load mask is built from `offs_k[:, None]` (BLOCK_K x 1) instead of
`offs_k[None, :]` (1 x BLOCK_K), which cannot broadcast with the BLOCK_M x 1 row mask, so every launch
raises (a compile error on a GPU, an InterpreterError on a CPU). The launcher catches the exception and
falls back to `torch.mm`, so the values are right and nothing is printed. It must be rejected: the
kernel raised and the launcher swallowed the error."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("a = tl.load(a_ptrs, mask=in_m & (offs_k[None, :] < k_left), other=0.0)",
         "a = tl.load(a_ptrs, mask=in_m & (offs_k[:, None] < k_left), other=0.0)"),
        (CH05_LAUNCH, """\
    try:
        matmul_kernel[grid](a, b, out, M, N, K,
                            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    except Exception:
        torch.mm(a, b, out=out)  # the kernel is not ready yet; keep the rest of the notebook running
""")),
}
EXPECT = {"cell": "matmul-visible", "reason": "swallowed-error", "device": "cpu"}
