"""9b's launcher dequantizes a and b with torch, multiplies them with `torch.mm` in fp32 and copies the product
into `out` with a Triton copy kernel of its own. The values are right (an fp32 product of the dequantized
inputs, rounded to bf16 once) and a learner's kernel writes every element of `out`. It must be rejected because
torch (aten::mm) computed the answer."""
from submissions.wrong import ch09_gemm_behind

CHAPTER_DIR = "09_low_precision"
CELLS = {"gemm-solution": ch09_gemm_behind(
    "(lambda deq: torch.mm(deq[0], deq[1].t()))(ch09.dequantize(a, a_scale, b, b_scale))")}
EXPECT = {"cell": "gemm-visible", "reason": "library-compute", "device": "cpu",
          "message": "torch computed with the grader's tensors"}
