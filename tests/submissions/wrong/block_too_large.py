"""1a's kernel is right, but the launcher asks for blocks of 2,048 threads, more than the 1,024 a
block may hold, and does not catch the refusal (unlike `swallowed_launch_failure`). It must be
rejected as a launch error, with the launch's grid and block and the 1,024-thread limit named."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "01_vector_add"
CELLS = {
    "vector-add-solution": edited(notebook_cell(CHAPTER_DIR, "vector-add-solution"),
                                  ("    threads = 256\n", "    threads = 2048  # fewer, bigger blocks\n")),
}
EXPECT = {"cell": "vector-add-visible", "reason": "launch-error", "device": "gpu", "message": "1024 threads"}
