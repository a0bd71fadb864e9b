"""5a's student has read the grader's source and bets on its seeds: that trial t of each shape draws
its inputs with seed t. When the cell runs, it replays the grader's own input recipe
(`ch05.MATMUL.make_inputs`) for seeds 0 to 7 at every shape the visible cell uses here, and stores
torch's products. The launcher computes nothing: the t-th call at a shape copies the product stored
for seed t into `out`, with a Triton copy kernel of its own (zeros for a shape it never saw). Nothing
reads the inputs during the call. The verifier draws every seed from the operating system's random
source (62 bits), so the copied products belong to other inputs: it must be rejected as a wrong
result."""
from submissions.wrong import CH05, TRITON_COPY_KERNEL, notebook_cell

CHAPTER_DIR = CH05
_SOLUTION = notebook_cell(CH05, "matmul-solution")
CELLS = {
    "matmul-solution": _SOLUTION[:_SOLUTION.index("\ndef matmul(a, b, out):")] + '''
from grader.chapters import ch05 as _grader_ch05

_device = "cuda" if session.has_gpu else "cpu"
_shapes = _grader_ch05.MATMUL.visible_sizes if session.has_gpu else _grader_ch05.MATMUL.cpu_sizes
_products = {}  # (M, N, K) -> products for seeds 0, 1, 2, ...
for _shape in _shapes:
    for _seed in range(8):
        _a, _b = _grader_ch05.MATMUL.make_inputs(_shape, torch.Generator(device=_device).manual_seed(_seed), _device)
        _products.setdefault(_shape, []).append((_a.float() @ _b.float()).half())
_calls = {}

''' + TRITON_COPY_KERNEL + '''


def matmul(a, b, out):
    shape = (a.shape[0], b.shape[1], a.shape[1])
    trial = _calls.get(shape, 0)
    _calls[shape] = trial + 1
    stored = _products.get(shape)
    answer = stored[trial % len(stored)] if stored else torch.zeros_like(out)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK=1024)
''',
}
EXPECT = {"cell": "matmul-visible", "reason": "wrong-result", "device": "cpu"}
