"""Exercise 4's kernel with one semicolon missing (`unsigned h[8]` at the end of a declaration), as a
learner's first attempt often has. It must be rejected as a compile error on a CPU too (NVRTC compiles
the kernel before its machine code is inspected), quoting the learner's own line."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "04_tensor_cores"
CELLS = {
    "wmma-solution": edited(notebook_cell(CHAPTER_DIR, "wmma-solution"), ("    unsigned h[8];\n", "    unsigned h[8]\n")),
}
EXPECT = {"cell": "wmma-tensor-cores", "reason": "compile-error", "device": "cpu", "message": "unsigned h[8]"}
