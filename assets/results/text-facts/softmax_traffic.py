"""The DRAM traffic of chapter 7a's softmax and of torch.softmax, for Nsight Compute to count:

    ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
        --kernel-name regex:'softmax|SoftMax' --launch-skip 2 --launch-count 1 \
        python3 assets/results/text-facts/softmax_traffic.py {solution|torch}

runs the solution's `softmax` (tests/submissions/ch07/correct.py, the notebook's cells) or torch.softmax
three times at the speed test's size, 4,096 rows of 32,000 fp32. The counted bytes are 8 an element
(one read, one write): 1,048,576,000 bytes. What DRAM moved beyond that is the second read that L2 did
not catch."""

import sys

import torch

from submissions.build import launchers

which = sys.argv[1]
rows, cols = 4096, 32000
x = torch.randn(rows, cols, device="cuda") * 3
out = torch.empty_like(x)
if which == "solution":
    softmax = launchers("ch07", "correct", ["softmax-solution"])["softmax"]
    run = lambda: softmax(x, out)  # noqa: E731
else:
    run = lambda: torch.softmax(x, -1)  # noqa: E731
for _ in range(3):
    run()
torch.cuda.synchronize()
print(f"{which}: {rows} x {cols} fp32, counted bytes {8 * rows * cols:,}")
