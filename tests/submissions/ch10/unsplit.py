"""10b's rung below: `decode_attention_split` is the student's own 10a launcher, one program per (sequence, KV head),
whatever the batch. Correct everywhere; at 10b's size, 32 programs for the GPU's SMs (grader/rungs.toml times it
against 10b's bar, assets/results/profiles/record_profiles.py profiles it for exercise 10.P)."""
CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "split-solution": '''
def decode_attention_split(q, k_cache, v_cache, block_table, lengths, out):
    decode_attention(q, k_cache, v_cache, block_table, lengths, out)   # 10a's kernel: no split
''',
}
