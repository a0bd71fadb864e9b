"""9a's kernel takes each group's amax over its first 64 columns only (a mask on half the group): every scale
where the largest value sits in the second half is too small, and those values saturate at 448. It must be
rejected: scales differ from the reference's."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {"quantize-solution": edited(notebook_cell(CHAPTER_DIR, "quantize-solution"),
                                     ("    amax = tl.max(magnitude, axis=1)\n",
                                      "    amax = tl.max(tl.where(cols[None, :] < group * GROUP + 64, magnitude, 0.0), axis=1)\n"))}
EXPECT = {"cell": "quantize-visible", "reason": "wrong-result", "device": "cpu", "message": "scale"}   # "scales differ", or a group holding NaN given a finite scale
