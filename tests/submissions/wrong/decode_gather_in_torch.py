"""10a's launcher lets torch gather every sequence's pages into a padded, contiguous copy (`k_cache[block_table]`), then
runs a kernel of its own on that copy as if the cache were not paged. The values are right and a learner's kernel
writes `out`, but torch did the paging, reading the cache and writing a copy as large: the launcher's bytes are not the
bytes the bar counts. It must be rejected because a torch operation ran on the grader's tensors inside the launcher."""
from submissions.wrong import notebook_cell

CHAPTER_DIR = "10_decode_attention"
_SOLUTION = notebook_cell(CHAPTER_DIR, "decode-solution")
CELLS = {
    "decode-solution": _SOLUTION[:_SOLUTION.index("\ndef decode_attention(")] + '''

def decode_attention(q, k_cache, v_cache, block_table, lengths, out):
    B, H, D = q.shape
    P, HKV = k_cache.shape[1], k_cache.shape[2]
    pages = block_table.shape[1]
    k = k_cache[block_table.clamp(min=0).long()].reshape(B * pages * P, HKV, D)   # gathered by torch
    v = v_cache[block_table.clamp(min=0).long()].reshape(B * pages * P, HKV, D)
    contiguous = torch.arange(B * pages, device=q.device, dtype=torch.int32).reshape(B, pages)
    decode_kernel[(B, HKV)](q, k, v, out, contiguous, lengths, LOG2E / math.sqrt(D), pages, H=H, HKV=HKV, D=D, P=P,
                            GROUP=H // HKV, ROWS=ch10.group_rows(H, HKV), BLOCK_N=ch10.kv_tile(), num_warps=4)
''',
}
EXPECT = {"cell": "decode-visible", "reason": "library-compute", "device": "cpu"}
