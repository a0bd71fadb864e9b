"""5b as the learner's 5a matmul followed by torch's bias add and GELU, in place on `out`: correct,
and exactly torch eager's memory traffic, so it must miss 5b's speed bar (1.1x eager) every time.
Everything else is the solution."""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "fused-solution": r'''
def matmul_bias_act(a, b, bias, out):
    matmul(a, b, out)
    out.add_(bias)
    torch.ops.aten.gelu_.default(out, approximate="tanh")
''',
}
