"""9a's launcher keeps a cache keyed by a cheap fingerprint of x (its data pointer, shape and eight values sampled
by a Triton kernel of its own). On a miss it runs the solution's kernel and keeps copies of the codes and scales,
made by a Triton copy kernel of its own; on a hit it copies them back with torch, launching only the sampling
kernel. Every value it returns is right, and
the calls that miss use only the learner's kernels; the timed calls that hit do not launch the quantize kernel
that a checked call of the same shape launched. It must be rejected where the cache pays: the speed cell."""
from submissions.wrong import TRITON_COPY_KERNEL, edited, notebook_cell

CHAPTER_DIR = "09_low_precision"
CELLS = {
    "quantize-solution": edited(
        notebook_cell(CHAPTER_DIR, "quantize-solution"),
        ("\n\ndef quantize(x, codes, scales):", TRITON_COPY_KERNEL + '''

@triton.jit
def sample_kernel(src_ptr, dst_ptr, n, step):
    i = tl.program_id(0)
    tl.store(dst_ptr + i, tl.load(src_ptr + i * step, mask=i * step < n, other=0.0).to(tl.float32))


_kept = {}


def _keep(t):
    kept = torch.empty_like(t)
    src, dst = (t, kept) if t.dtype == torch.float32 else (t.view(torch.uint8), kept.view(torch.uint8))
    copy_kernel[(triton.cdiv(t.numel(), 1024),)](src, dst, t.numel(), BLOCK=1024)
    return kept


def _fingerprint(t):
    picks = torch.empty(8, dtype=torch.float32, device=t.device)
    sample_kernel[(8,)](t, picks, t.numel(), max(1, t.numel() // 8))
    return t.data_ptr(), tuple(t.shape), tuple(picks.tolist())


def quantize(x, codes, scales):'''),
        ("    M, K = x.shape\n    block_m = 16\n", '''    key = _fingerprint(x)
    if key in _kept:
        codes.copy_(_kept[key][0])   # seen this x before: its codes and scales are kept
        scales.copy_(_kept[key][1])
        return
    M, K = x.shape
    block_m = 16
'''),
        ("    quantize_kernel[grid](x, codes, scales, M, K, BLOCK_M=block_m, GROUP=ch09.GROUP, num_warps=4)\n",
         "    quantize_kernel[grid](x, codes, scales, M, K, BLOCK_M=block_m, GROUP=ch09.GROUP, num_warps=4)\n"
         "    _kept[key] = (_keep(codes), _keep(scales))\n")),
}
EXPECT = {"cell": "quantize-speed", "reason": "kernel-unused", "device": "gpu"}
