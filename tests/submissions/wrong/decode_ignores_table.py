"""10a's kernel ignores the block table and takes sequence b's page j to be page b * max_pages + j, where a contiguous
cache would put it. The visible cases' tables happen to be in that order, so every visible test passes; the hidden
cases shuffle the pages and share a prefix, as a server's pool does, and must catch it."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "decode-solution": edited(notebook_cell(CHAPTER_DIR, "decode-solution"),
                              ("    page = tl.load(TABLE + tok // P, mask=valid, other=0)\n",
                               "    page = TABLE_ROW + tok // P   # where a contiguous cache would put it\n"),
                              ("def attend_to_tokens(acc, m_i, l_i, q, K, V, TABLE, start,",
                               "def attend_to_tokens(acc, m_i, l_i, q, K, V, TABLE_ROW, start,"),
                              ("TABLE + b * table_stride, start, length, last,",
                               "b * table_stride, start, length, last,")),
}
EXPECT = {"cell": "decode-hidden", "reason": "wrong-result", "device": "cpu"}
