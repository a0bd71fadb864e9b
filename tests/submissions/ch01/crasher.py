"""A student whose 1a kernel crashes the GPU: the launcher passes the kernel's arguments in the wrong
order (see tests/submissions/wrong/illegal_address.py), so every launch dies with an illegal memory
access, an error that poisons the whole CUDA context of the process it happens in. The notebook's
own kernel hits it too, in the ungraded bandwidth plot. Only 1a's three cells may fail: 9 of 15 on
a GPU (3 on a CPU, where only the napkin cells and the diagnosis can score)."""
from submissions.wrong.illegal_address import CELLS  # noqa: F401

CHAPTER_DIR = "01_vector_add"
