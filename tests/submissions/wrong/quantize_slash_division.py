"""9a's kernel divides with Triton's `/` instead of tl.div_rn. On a GPU `/` on fp32 compiles to an approximate
division (div.full.f32: Triton 3.9's PTX for sm_90, tests/chapters/test_ch09.py), so scales and codes differ from
torch's correctly rounded division by a unit in the last place here and there: enough for a scale to differ at
the visible sizes. In Triton's interpreter `/` is numpy's exact division, so only a GPU can see it."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {"quantize-solution": edited(notebook_cell(CHAPTER_DIR, "quantize-solution"),
                                     ("tl.div_rn(tl.maximum(amax, 1e-4), 448.0)", "tl.maximum(amax, 1e-4) / 448.0"),
                                     ("tl.div_rn(x, scale[:, None])", "x / scale[:, None]"))}
EXPECT = {"cell": "quantize-visible", "reason": "wrong-result", "device": "gpu", "message": "tl.div_rn"}
