"""A student with a mistake in every exercise: the napkin math takes the e4m3 step one power of two too fine,
the quantize kernel multiplies by the scale where it should divide, the GEMM forgets B's scales, the curve's
slope is fitted against K rather than log2(K), and the MX kernel swaps A's and B's scales. Every graded cell
fails, on a CPU too."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {
    "napkin-solution": edited(notebook_cell(CHAPTER_DIR, "napkin-solution"),
                              ("return 2.0 ** (max(exponent, min_exp) - mantissa)",
                               "return 2.0 ** (max(exponent, min_exp) - mantissa - 1)")),
    "quantize-solution": edited(notebook_cell(CHAPTER_DIR, "quantize-solution"),
                                ("tl.div_rn(x, scale[:, None])", "x * scale[:, None]")),
    "gemm-solution": edited(notebook_cell(CHAPTER_DIR, "gemm-solution"),
                            ("* a_scale[:, None] * b_scale[None, :]", "* a_scale[:, None]")),
    "curve-solution": edited(notebook_cell(CHAPTER_DIR, "curve-solution"),
                             ("np.polyfit(np.log2(ks), np.log2(plain), 1)", "np.polyfit(ks, np.log2(plain), 1)")),
    "mx-solution": edited(notebook_cell(CHAPTER_DIR, "mx-solution"),
                          ('acc = tl.dot_scaled(a, a_scale, "e4m3", b, b_scale, "e4m3", acc)',
                           'acc = tl.dot_scaled(a, b_scale, "e4m3", b, a_scale, "e4m3", acc)')),
}
