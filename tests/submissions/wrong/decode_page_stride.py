"""10a's kernel steps over its sequence's tokens two tiles at a time and reads only the first of each pair: half of the
cache, every other run of 64 tokens, which halves the bytes and so doubles any fraction of the copy ceiling. The output
is attention over half the keys: wrong wherever a sequence is longer than one tile, which the visible cases are."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "decode-solution": edited(notebook_cell(CHAPTER_DIR, "decode-solution"),
                              ("    for start in range(0, length, BLOCK_N):\n        acc, m_i, l_i = attend_to_tokens(",
                               "    for start in range(0, length, 2 * BLOCK_N):   # every other tile\n"
                               "        acc, m_i, l_i = attend_to_tokens(")),
}
EXPECT = {"cell": "decode-visible", "reason": "wrong-result", "device": "cpu"}
