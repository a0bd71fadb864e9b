"""10a's launcher counts its calls, and from the 50th on, which only a timing reaches, tells its kernel to stop every
sequence at 1,024 tokens: the timed batches read about a fifth of the cache that the declared lengths need, while the
grader counts the bytes of the lengths it declared, so the fraction of the copy ceiling looks five times better. No
torch operation touches the grader's tensors (the cap is a kernel argument). It must be rejected in the speed cell: the
timed calls' outputs are attention over the first 1,024 tokens only, which the re-check of a timed batch finds."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "decode-solution": edited(
        notebook_cell(CHAPTER_DIR, "decode-solution"),
        ("def decode_kernel(Q, K, V, O, TABLE, LENGTHS, qk_scale, table_stride,",
         "def decode_kernel(Q, K, V, O, TABLE, LENGTHS, qk_scale, table_stride, cap,"),
        ("    length = tl.load(LENGTHS + b)\n", "    length = tl.minimum(tl.load(LENGTHS + b), cap)\n"),
        ("\n\ndef decode_attention(q, k_cache, v_cache, block_table, lengths, out):",
         "\n\n_calls = [0]\n\n\ndef decode_attention(q, k_cache, v_cache, block_table, lengths, out):\n"
         "    _calls[0] += 1\n    cap = 1024 if _calls[0] >= 50 else 2**30   # short only when timed"),
        ("                            block_table.stride(0), H=H,", "                            block_table.stride(0), cap, H=H,")),
}
EXPECT = {"cell": "decode-speed", "reason": "wrong-result", "device": "gpu"}
