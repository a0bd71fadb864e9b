"""A student with mistakes: `amdahl` multiplies by the speedup instead of dividing; `worth_writing` tests
headroom before hotness (a cold op with no headroom is called "no headroom" instead of "not hot") and
predicts without the ceiling's cap; the block's norm forgets the weight. Every graded cell fails, on a
GPU and on a CPU (the speed cell at its correctness check at the timing size, or at the CPU pre-check)."""
from submissions.ch08 import edited, notebook_cell

CHAPTER_DIR = "08_should_you_write_it"
_HOT = '    if row.share < ch08.MIN_SHARE:\n        return False, "not hot", predicted\n'
_HEADROOM = '    if row.achieved / row.ceiling >= ch08.MAX_OF_CEILING:\n        return False, "no headroom", predicted\n'
CELLS = {
    "decide-solution": edited(
        notebook_cell("decide-solution"),
        ("return 1.0 / ((1.0 - share) + share / speedup)", "return 1.0 / (1.0 - share + share * speedup)"),
        ("    reachable = min(speedup, row.ceiling / row.achieved)   # no kernel beats the ceiling\n",
         "    reachable = speedup\n"),
        (_HOT + _HEADROOM, _HEADROOM + _HOT)),
    "norm-paste": edited(notebook_cell("norm-paste"),
                         ("tl.store(out_ptr + start + cols, (r * scale * w)", "tl.store(out_ptr + start + cols, (r * scale)")),
}
