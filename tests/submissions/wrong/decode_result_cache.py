"""10a's launcher keeps a cache of its results keyed by a fingerprint of its query: its data pointer, its shape and eight
values sampled by a small Triton kernel of its own. On a miss it runs the solution's kernel and keeps a copy of the
output (its own copy kernel); on a hit it returns the kept copy with `out.copy_`, reading no cache at all. Every value it
returns is right for the calls it sees twice. A timer that calls it on the same inputs measures a 2 MiB copy instead of
a 1 GiB cache read: an impossible fraction of the copy ceiling. It must be rejected in the speed cell, where the cache
pays: the timed calls that hit launch only the fingerprint kernel, not the decode kernel a checked call on inputs of
the same shape launched."""
from submissions.wrong import FINGERPRINT_CACHE, edited, notebook_cell

CHAPTER_DIR = "10_decode_attention"
CELLS = {
    "decode-solution": edited(
        notebook_cell(CHAPTER_DIR, "decode-solution"),
        ("\n\ndef decode_attention(q, k_cache, v_cache, block_table, lengths, out):", FINGERPRINT_CACHE + '''

def decode_attention(q, k_cache, v_cache, block_table, lengths, out):
    key = _fingerprint(q)
    if key in _results:
        out.copy_(_results[key])   # seen this query before: no need to read the cache again
        return'''),
        ("BLOCK_N=ch10.kv_tile(), num_warps=4)\n", '''BLOCK_N=ch10.kv_tile(), num_warps=4)
    kept = torch.empty_like(out)
    copy_kernel[(triton.cdiv(out.numel(), 1024),)](out, kept, out.numel(), BLOCK=1024)
    _results[key] = kept
''')),
}
EXPECT = {"cell": "decode-speed", "reason": "kernel-unused", "device": "gpu"}
