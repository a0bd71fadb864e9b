"""Stretch 1b's two notebook cells on a GPU, outside the notebook: `ch06.check_attention_fast` on the solution's
`attention_fast` (correctness, then the four timed cases against their own bars, as the cell prints them), and
`ch06.plot_fast` of the results, saved as DIR/stretch_fast.png.

    PYTHONPATH=$PWD:$PWD/tests python3 assets/results/issue19/stretch_fast_cell.py DIR
"""

import sys
from pathlib import Path

from grader.chapters import ch06
from submissions.build import launchers

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
ns = launchers("ch06", "correct", ["attention-solution", "stretch-fast-solution"])
results = ch06.check_attention_fast(ns["attention_fast"])
for r in results or []:
    print(f"{r.key}: {r.speedup:.3f}x, bar {r.bar:.2f}, {'passes' if r.passed else 'below the bar'}")
fig = ch06.plot_fast(results)
if fig is not None:
    fig.savefig(out / "stretch_fast.png", dpi=110)
