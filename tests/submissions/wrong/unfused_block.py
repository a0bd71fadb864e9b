"""8b's block with the fusions taken out (tests/submissions/ch08/unfused.py): an add kernel before each
RMSNorm kernel, and a bias + GELU kernel after a plain matmul. Every kernel is the student's own and the
block is correct, and it measured 1.16-1.18x eager on an H100, above the bar of 1.1
(assets/results/calibration/ch08-h100/calibration-unfused.json): the bar alone cannot tell it from the fused block.
The device trace of its timed calls counts 10 launches of the student's kernels per call against the
fused block's 7, and the speed cell refuses it for that."""
from submissions.ch08.unfused import CELLS as _UNFUSED

CHAPTER_DIR = "08_should_you_write_it"
CELLS = dict(_UNFUSED)
EXPECT = {"cell": "block-speed", "reason": "not-fused", "device": "gpu", "message": "launched 10 of your kernels"}
