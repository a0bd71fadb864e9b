"""A student whose 1a kernel never finishes (see tests/submissions/wrong/infinite_loop_kernel.py).
Each of 1a's graded checks must time out and have its processes killed, which frees the GPU; the
ungraded bandwidth plot hangs the notebook's own kernel, which is restarted. Every other exercise
is graded as usual: 9 of 15 on a GPU (3 on a CPU)."""
from submissions.wrong.infinite_loop_kernel import CELLS  # noqa: F401

CHAPTER_DIR = "01_vector_add"
