"""A correct, fused 1b whose launcher was left in a debugging state: after each launch it synchronizes
and prints a line with a few sampled values of `out`, copied to the host. Its kernel alone runs at
about 2x torch eager on an H100, above the 1.5x bar; the calls do not, because each one waits for the
GPU, copies and prints. It must fail the bar honestly, and the speed report must say that the kernel
alone would clear it and name the synchronize as the likely cause."""
from submissions.wrong import notebook_cell

CHAPTER_DIR = "01_vector_add"
_SOLUTION = notebook_cell(CHAPTER_DIR, "fused-solution")
CELLS = {
    "fused-solution": _SOLUTION[:_SOLUTION.index("\ndef fused_axpb_relu(a, x, b, out):")] + r'''
import cupy

_calls = 0


def fused_axpb_relu(a, x, b, out):
    """out = relu(a * x + b), with the debugging lines still in."""
    global _calls
    n = out.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    fused_kernel((blocks,), (threads,), (a, x, b, out, np.int64(n)))
    torch.cuda.synchronize()
    _calls += 1
    sample = cupy.asnumpy(cupy.from_dlpack(out)[::64])
    print(f"call {_calls}: n={n:,} min={sample.min():.4f} max={sample.max():.4f}")
''',
}
EXPECT = {"cell": "fused-speed", "reason": "below-bar", "device": "gpu",
          "message": "Likely cause: a synchronize in your launcher"}
