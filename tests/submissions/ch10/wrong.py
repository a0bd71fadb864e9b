"""A student with a mistake in every exercise: the napkin math counts the keys but not the values, the
intensity forgets the group, the decode kernel scales the scores by 1/D instead of 1/sqrt(D), the split kernel's
merge adds the partial outputs without weighting them by their log-sum-exp, and the diagnosis names the DRAM
bandwidth. Every graded cell fails; without a GPU the speed cells say "no GPU"."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "napkin-solution": edited(notebook_cell(CHAPTER_DIR, "napkin-solution"),
                              ("cache = 2 * sum(lengths)", "cache = sum(lengths)"),
                              ("return (4 * group * head_dim) / (2 * 2 * head_dim)", "return 1.0")),
    "decode-solution": edited(notebook_cell(CHAPTER_DIR, "decode-solution"),
                              ("LOG2E / math.sqrt(D),", "LOG2E / D,")),
    "split-solution": edited(notebook_cell(CHAPTER_DIR, "split-solution"),
                             ("    weight = tl.exp2(lse - tl.max(lse, 0))", "    weight = tl.where(here, 1.0, 0.0)")),
    "diagnose-solution": edited(notebook_cell(CHAPTER_DIR, "diagnose-solution"),
                                ("return 'too-few-programs'", "return 'dram-bandwidth'")),
}
