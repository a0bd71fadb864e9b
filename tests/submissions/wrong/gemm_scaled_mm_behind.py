"""9b's launcher calls `torch._scaled_mm` with the same block scales (the baseline itself, cuBLAS) and copies its
result into `out` with a Triton copy kernel of its own. The values are cuBLAS's, right to the tolerance, and a
learner's kernel writes every element of `out`. It must be rejected because a library computed the answer."""
from submissions.wrong import ch09_gemm_behind

CHAPTER_DIR = "09_low_precision"
CELLS = {"gemm-solution": ch09_gemm_behind("ch09.scaled_mm_baseline(a, a_scale, b, b_scale)")}
# A GPU entry: torch's CPU build has no 1x128 / 128x128 recipe, and cuBLAS runs it on sm_90 only.
EXPECT = {"cell": "gemm-visible", "reason": "library-compute", "device": "gpu"}
