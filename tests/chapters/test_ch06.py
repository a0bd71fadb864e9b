"""Chapter 6 (FlashAttention in Triton): the grader's logic on the CPU, the solution's kernels under
Triton's interpreter and compiled for sm_80 and sm_90 without a GPU, `ladder check` of the solution
and of the release on a CPU, and the verdicts on a GPU (skipped without one)."""

import ast
import inspect
import json
import math
import textwrap

import pytest
import torch

from conftest import HAS_GPU, ROOT, ladder_check_one, run_script, torch_kernel
from grader.harness import correctness
from grader.chapters import ch06
from grader.errors import CheckFailed, NoGPUError, NotImplementedYet
from submissions.build import build

SOLUTION = ROOT / "solutions/06_flash_attention/06_flash_attention.ipynb"
RELEASE = ROOT / "course/06_flash_attention/06_flash_attention.ipynb"


def _cells(path=SOLUTION) -> dict:
    return {c["id"]: "".join(c["source"]) for c in json.loads(path.read_text())["cells"]}


@pytest.fixture
def no_gpu(monkeypatch):
    """Behave as on a machine without a GPU, also where there is one."""
    import grader.harness.exercise as exercise

    reason = lambda: (False, "no GPU found (test)")  # noqa: E731
    monkeypatch.setattr(exercise, "gpu_or_reason", reason)
    monkeypatch.setattr(ch06, "gpu_or_reason", reason)


@torch_kernel
def torch_attention(q, k, v, out, causal):
    """A correct launcher without Triton: exercises the checks, not a kernel."""
    out.copy_(ch06.attention_reference(q.double(), k.double(), v.double(), causal))


def stub(*args):
    raise NotImplementedError()


# ------------------------------------------------------------------------------ the numbers

def test_flop_counts():
    assert ch06.attention_flops((1, 1, 4, 2)) == 4 * 16 * 2
    assert ch06.attention_flops((1, 1, 4, 2), causal=True) == 4 * 10 * 2
    assert ch06.attention_flops(ch06.SPEED_SIZE) == 4 * 4 * 16 * 4096**2 * 64


def test_napkin_check_accepts_right_and_names_the_wrong_call(capsys):
    right_bytes = lambda b, h, n, e: b * h * n * n * e  # noqa: E731
    right_flops = lambda b, h, n, d: 4 * b * h * n * n * d  # noqa: E731
    ch06.check_napkin_math(right_bytes, right_flops)
    assert "✓ 6.0" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"attention_flops\(1, 1, 1, 64\).*two matmuls.*expected 256"):
        ch06.check_napkin_math(right_bytes, lambda b, h, n, d: 2 * b * h * n * n * d)
    with pytest.raises(CheckFailed, match=r"score_bytes\(4, 16, 4096, 2\).*every batch and head"):
        ch06.check_napkin_math(lambda b, h, n, e: h * n * n * e, right_flops)
    with pytest.raises(NotImplementedYet, match="6.0 is not written yet"):
        ch06.check_napkin_math(stub, right_flops)


def test_memory_budget_grows_like_n_and_excludes_scores():
    for size in ch06.MEMORY_SIZES:
        b, h, n, d = size
        operands = 4 * b * h * n * d * 2
        assert 2 * operands <= ch06.memory_budget(size) < b * h * n * n * 2, size
    small, large = ch06.MEMORY_SIZES[0], ch06.MEMORY_SIZES[-1]
    assert large[2] == 4 * small[2]
    grow = (ch06.memory_budget(large) - ch06.MEMORY_SLACK) / (ch06.memory_budget(small) - ch06.MEMORY_SLACK)
    assert grow == pytest.approx(4.0)


# ---------------------------------------------------------------- reference, inputs, tolerance

@pytest.mark.parametrize("causal", [False, True])
def test_reference_in_row_chunks_is_exact_attention(causal):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (t.double() for t in ch06.make_inputs((2, 3, 37, 16), gen, "cpu"))
    s = q @ k.transpose(-2, -1) / math.sqrt(16)
    if causal:
        s = s.masked_fill(torch.ones(37, 37, dtype=torch.bool).triu(1), float("-inf"))
    full = torch.softmax(s, dim=-1) @ v
    chunked = ch06.attention_reference(q, k, v, causal, chunk_bytes=8 * 2 * 3 * 37 * 5)  # 5 rows a chunk
    torch.testing.assert_close(chunked, full, rtol=1e-12, atol=1e-12)


def test_inputs_push_scores_past_where_exp_overflows():
    gen = torch.Generator().manual_seed(2)
    q, k, _ = (t.double() for t in ch06.make_inputs((1, 1, 256, 64), gen, "cpu"))
    scores = (q @ k.transpose(-2, -1)) / 8
    assert scores.abs().max() > 100, "a softmax without the running max must overflow on these inputs"
    spread = scores.amax(-1) - scores.amin(-1)
    assert spread.min() < 20 < spread.max(), "rows range from flat to peaked"


def _emulated_flash(q, k, v, p_dtype, block=64):
    """The solution's arithmetic in torch: fp32 scores, P rounded to p_dtype, fp32 accumulator."""
    b, h, n, d = q.shape
    m = torch.full((b, h, n), float("-inf"))
    l = torch.zeros(b, h, n)
    acc = torch.zeros(b, h, n, d)
    for j in range(0, n, block):
        s = q.float() @ k[..., j:j + block, :].float().transpose(-2, -1) / math.sqrt(d)
        m_new = torch.maximum(m, s.amax(-1))
        p = torch.exp(s - m_new[..., None])
        l = l * torch.exp(m - m_new) + p.sum(-1)
        acc = acc * torch.exp(m - m_new)[..., None] + p.to(p_dtype).float() @ v[..., j:j + block, :].float()
        m = m_new
    return (acc / l[..., None]).half()


def test_tolerance_passes_fp16_arithmetic_and_fails_bf16_weights():
    gen = torch.Generator().manual_seed(3)
    q, k, v = ch06.make_inputs((1, 2, 1024, 64), gen, "cpu")
    expected = ch06.attention_reference(q.double(), k.double(), v.double())
    rtol, atol = ch06.TOLERANCE
    correctness.compare(_emulated_flash(q, k, v, torch.float16), expected, rtol=rtol, atol=atol, what="fp16")
    with pytest.raises(CheckFailed, match="wrong result"):
        correctness.compare(_emulated_flash(q, k, v, torch.bfloat16), expected, rtol=rtol, atol=atol, what="bf16")


# --------------------------------------------------------------------- 6.1, tiled attention

def _tiled(q, k, v, block_n):
    n, d = q.shape
    m = torch.full((n,), float("-inf"))
    l = torch.zeros(n)
    acc = torch.zeros(n, d)
    for j in range(0, n, block_n):
        s = q @ k[j:j + block_n].T / math.sqrt(d)
        m_new = torch.maximum(m, s.amax(1))
        p = torch.exp(s - m_new[:, None])
        l = torch.exp(m - m_new) * l + p.sum(1)
        acc = torch.exp(m - m_new)[:, None] * acc + p @ v[j:j + block_n]
        m = m_new
    return acc / l[:, None]


def test_tiled_attention_check(capsys):
    ch06.check_tiled_attention(_tiled)
    assert "✓ 6.1" in capsys.readouterr().out

    def no_max(q, k, v, block_n):
        p = torch.exp(q @ k.T / math.sqrt(q.shape[1]))
        return (p @ v) / p.sum(1, keepdim=True)

    with pytest.raises(CheckFailed, match="exp\\(\\) overflows") as info:
        ch06.check_tiled_attention(no_max)
    assert "never written" not in str(info.value)
    with pytest.raises(CheckFailed, match="returned torch.float64"):
        ch06.check_tiled_attention(lambda q, k, v, b: _tiled(q, k, v, b).double())
    with pytest.raises(NotImplementedYet, match="6.1 is not written yet"):
        ch06.check_tiled_attention(stub)
    with pytest.raises(CheckFailed, match="ZeroDivisionError"):
        ch06.check_tiled_attention(lambda q, k, v, b: 1 / 0)


# ------------------------------------------------------- exercise 6 checks, with torch launchers

def test_correctness_on_cpu_uses_small_sizes_and_leaves_out_large_ones(no_gpu, capsys):
    ch06.check_attention(torch_attention, trials=1)
    ch06.check_attention(torch_attention, ch06.HIDDEN_SIZES, trials=1)
    out = capsys.readouterr().out
    assert "N=64" in out and "N=16,384" in out and "larger sizes left out" in out
    assert "N=4,097" not in out.split("left out")[0]


def test_a_wrong_causal_mask_is_caught(no_gpu):
    @torch_kernel
    def off_by_one(q, k, v, out, causal):
        n = q.shape[-2]
        s = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(2), float("-inf"))  # sees one key too many
        out.copy_(torch.softmax(s, -1) @ v.double())

    with pytest.raises(CheckFailed, match="6-causal attention forward, causal.*wrong result"):
        ch06.check_attention(off_by_one, trials=1)


def test_without_a_gpu_speed_and_memory_say_so_and_stubs_say_not_written(no_gpu, capsys):
    with pytest.raises(NoGPUError, match="no GPU: memory not measured"):
        ch06.check_attention_memory(torch_attention)
    with pytest.raises(NoGPUError, match="no GPU: speed not measured for exercise 6 "):
        ch06.check_attention_speed(torch_attention)
    with pytest.raises(NoGPUError, match="no GPU: speed not measured for exercise 6-causal"):
        ch06.check_causal_speed(torch_attention)
    for check in (ch06.check_attention_memory, ch06.check_attention_speed, ch06.check_causal_speed,
                  ch06.check_attention):
        with pytest.raises(NotImplementedYet, match="and its kernel in the code cell under 'Exercise 6'"):
            check(stub)
    assert ch06.check_attention_stretch(torch_attention) is None
    assert ch06.check_attention_stretch(stub) is None
    out = capsys.readouterr().out
    assert "Stretch goal not measured: no GPU" in out and "Stretch goal not attempted yet" in out


def test_triton_failures_with_a_known_cause_get_a_message(no_gpu):
    class CompilationError(Exception):
        pass

    CompilationError.__module__ = "triton.compiler.errors"

    def kernel_stub(*args):
        raise CompilationError("at 3:4:\n    raise NotImplementedError()\nunsupported AST node type: Raise")

    with pytest.raises(NotImplementedYet, match="still the released stub"):
        ch06.bind(kernel_stub, False)(None, None, None, None)

    def imported_too_early(*args):
        raise CompilationError("Cannot call @triton.jit'd outside of the scope of a kernel")

    # The message is for a process that has imported Triton's language (before `start()`): import it here,
    # so that this test does not depend on an earlier test having done so.
    pytest.importorskip("triton.language")

    with pytest.raises(CheckFailed, match="Restart the notebook's kernel"):
        ch06.bind(imported_too_early, False)(None, None, None, None)


def test_backward_check_with_autograd_and_when_not_written(no_gpu, capsys):
    @torch_kernel
    def backward(q, k, v, out, lse, dout, dq, dk, dv, causal):
        for dst, grad in zip((dq, dk, dv), ch06.backward_reference(q, k, v, dout, causal)):
            dst.copy_(grad)

    assert ch06.check_backward(backward) == 2 * len(ch06.BACKWARD_CPU_SIZES)
    assert "✓ 6b attention backward" in capsys.readouterr().out
    with pytest.raises(NotImplementedYet, match="exercise 6b"):
        ch06.check_backward(stub)

    @torch_kernel
    def no_scale(q, k, v, out, lse, dout, dq, dk, dv, causal):
        for dst, grad in zip((dq, dk, dv), ch06.backward_reference(q, k, v, dout, causal)):
            dst.copy_(grad)
        dq.mul_(math.sqrt(q.shape[-1]))

    with pytest.raises(CheckFailed, match="dq: wrong result"):
        ch06.check_backward(no_scale)


def test_backward_reference_in_head_groups_is_autograd():
    gen = torch.Generator().manual_seed(3)
    q, k, v = ch06.make_inputs((2, 3, 20, 16), gen, "cpu", dtype=torch.float64)
    dout = torch.randn(q.shape, generator=gen, dtype=torch.float64)
    for causal in (False, True):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
        want = torch.autograd.grad(out, leaves, dout)
        got = ch06.backward_reference(q, k, v, dout, causal, chunk_bytes=1)   # one (batch, head) at a time
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10)
        s = (q @ k.transpose(-2, -1)) / 4
        if causal:
            s = s.masked_fill(torch.ones(20, 20, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(ch06.lse_reference(q, k, causal, chunk_bytes=1), torch.logsumexp(s, -1))


def _emulated_backward(q, k, v, out, lse, dout, causal, low=torch.float16, keep_delta=True):
    """The solution's arithmetic in torch: P from lse in fp32, P and dS rounded to `low` for the products."""
    n, d = q.shape[-2:]
    s = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.exp(s - lse[..., None])
    delta = (out.float() * dout.float()).sum(-1, keepdim=True) if keep_delta else 0
    dv = p.to(low).float().transpose(-2, -1) @ dout.float()
    ds = p * (dout.float() @ v.float().transpose(-2, -1) - delta)
    dq = ds.to(low).float() @ k.float() / math.sqrt(d)
    dk = ds.to(low).float().transpose(-2, -1) @ q.float() / math.sqrt(d)
    return [t.half() for t in (dq, dk, dv)]


def _worst(got, want):
    """The largest |got - want| / (max(max|want|, max|dv|) + |want|) of the three gradients: below
    BACKWARD_TOLERANCE passes."""
    floor = float(want[2].abs().max())
    return max(float(((g.double() - w).abs() / (max(float(w.abs().max()), floor) + w.abs())).max())
               for g, w in zip(got, want))


@pytest.mark.parametrize("causal", [False, True])
def test_backward_tolerance_passes_fp16_arithmetic_and_fails_a_missing_delta(causal):
    gen = torch.Generator().manual_seed(11)
    q, k, v, out, lse, dout = ch06.backward_inputs((1, 2, 1000, 64), gen, "cpu", causal)
    want = ch06.backward_reference(q, k, v, dout, causal)
    good = _worst(_emulated_backward(q, k, v, out, lse, dout, causal), want)
    assert good < ch06.BACKWARD_TOLERANCE / 2, good
    bad = _worst(_emulated_backward(q, k, v, out, lse, dout, causal, keep_delta=False), want)
    assert bad > 10 * ch06.BACKWARD_TOLERANCE, bad


def test_backward_gradcheck_catches_a_backward_that_disagrees_with_its_forward(no_gpu, monkeypatch):
    # The check's verdicts on three pairs of launchers, on one small shape (3 rows, causal and not): where gradcheck
    # fails, torch computes the whole numerical Jacobian for its message, one forward call per input element, and at
    # the check's own sizes the failing fp32 forward alone took 28 s of CPU. The solution's grading
    # (tests/solution_runs.py) and chapter 6's correct exploit entries run the check at its own sizes.
    monkeypatch.setattr(ch06, "GRADCHECK_SIZES", ((1, 1, 3, 16),))

    @torch_kernel
    def forward(q, k, v, out, lse, causal):
        out.copy_(ch06.attention_reference(q.double(), k.double(), v.double(), causal))
        lse.copy_(ch06.lse_reference(q.double(), k.double(), causal))

    @torch_kernel
    def backward(q, k, v, out, lse, dout, dq, dk, dv, causal):
        for dst, grad in zip((dq, dk, dv), ch06.backward_reference(q, k, v, dout, causal)):
            dst.copy_(grad)

    ch06.check_backward_gradcheck(forward, backward)

    @torch_kernel
    def rounded(q, k, v, out, lse, dout, dq, dk, dv, causal):
        for dst, grad in zip((dq, dk, dv), ch06.backward_reference(q, k, v, dout, causal)):
            dst.copy_(grad.half())   # rounded to fp16 even for float64 inputs

    with pytest.raises(CheckFailed, match="in float64"):
        ch06.check_backward_gradcheck(forward, rounded)

    @torch_kernel
    def fp32_forward(q, k, v, out, lse, causal):
        forward(q, k, v, out, lse, causal)
        out.copy_(out.float())   # fp32 sums: finite differences in float64 see the rounding

    with pytest.raises(CheckFailed, match="gradcheck"):
        ch06.check_backward_gradcheck(fp32_forward, backward)


def test_notebook_naive_attention_is_the_graders():
    tree = ast.parse(_cells()["naive"])
    nb_fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "naive_attention")
    grader_fn = ast.parse(textwrap.dedent(inspect.getsource(ch06.naive_attention))).body[0]
    assert ast.dump(nb_fn) == ast.dump(grader_fn), "the notebook shows the function the speed test times"


# --------------------------------------------------------- the kernels, on a CPU, in subprocesses
# Triton decides between compiling and interpreting when it is imported, so each mode runs in a
# fresh interpreter rather than in this test process.

INTERPRETED = r"""
import contextlib, io, json
from grader.chapters import ch06
from grader.errors import LadderError
from submissions.build import launchers

def outcome(check, *args):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check(*args)
        return "pass"
    except LadderError as exc:
        return f"{type(exc).__name__}: {exc}"

solution = launchers("ch06", "correct", ["attention-solution", "backward-solution", "stretch-fast-solution"])
found = {
    "fast": outcome(lambda f: ch06.check_attention(f, ch06.HIDDEN_SIZES, trials=1), solution["attention_fast"]),
    "fast-stretch": outcome(ch06.check_attention_fast, solution["attention_fast"]),
    "visible": outcome(ch06.check_attention, solution["attention"]),
    "hidden": outcome(lambda f: ch06.check_attention(f, ch06.HIDDEN_SIZES, trials=1), solution["attention"]),
    "backward": outcome(ch06.check_backward, solution["attention_backward"]),
    "backward-hidden": outcome(lambda f: ch06.check_backward(f, ch06.BACKWARD_HIDDEN), solution["attention_backward"]),
    "gradcheck": outcome(ch06.check_backward_gradcheck, solution["attention_forward"], solution["attention_backward"]),
    "backward-speed": outcome(ch06.check_backward_speed, solution["attention_backward"]),
    "backward-memory": outcome(ch06.check_backward_memory, solution["attention_backward"]),
    "speed": outcome(ch06.check_attention_speed, solution["attention"]),
    "memory": outcome(ch06.check_attention_memory, solution["attention"]),
}
for name in ("naive_triton", "no_skip", "wrong"):
    fn = launchers("ch06", name, ["attention-solution"])["attention"]
    found[name] = outcome(ch06.check_attention, fn, [(1, 2, 100, 64)], 1)

stub_kernel = '''
import triton
import triton.language as tl

@triton.jit
def kernel(X):
    # YOUR CODE HERE
    raise NotImplementedError()

def attention(q, k, v, out, causal):
    kernel[(1,)](q)
'''
ns = {"__name__": "stub_kernel"}
exec(stub_kernel, ns)
found["kernel_stub"] = outcome(ch06.check_attention, ns["attention"])
print(json.dumps(found))
"""


@pytest.mark.slow
def test_solution_and_students_under_the_triton_interpreter():
    found = run_script(INTERPRETED, interpret=True)
    for cell in ("visible", "hidden", "backward", "backward-hidden", "gradcheck", "fast", "fast-stretch"):
        assert found[cell] == "pass", found[cell]
    assert found["backward-speed"].startswith("NoGPUError: no GPU: speed not measured for exercise 6b"), found
    assert found["backward-memory"].startswith("NoGPUError: no GPU: memory not measured for exercise 6b"), found
    assert found["speed"].startswith("NoGPUError: no GPU: speed not measured"), found["speed"]
    assert found["memory"].startswith("NoGPUError: no GPU: memory not measured"), found["memory"]
    assert found["naive_triton"] == "pass" and found["no_skip"] == "pass", found
    assert found["wrong"].startswith("CheckFailed") and "wrong result" in found["wrong"], found["wrong"]
    assert found["kernel_stub"].startswith("NotImplementedYet") and "write `attention(q, k, v, out, causal)` and its kernel" in found["kernel_stub"]


EARLY_IMPORT = r"""
import json, os
import triton.language  # before TRITON_INTERPRET is set, as a notebook that imports Triton first
from grader.chapters import ch06
from grader.errors import LadderError
from submissions.build import launchers

os.environ["TRITON_INTERPRET"] = "1"
attention = launchers("ch06", "correct", ["attention-solution"])["attention"]
try:
    ch06.check_attention(attention)
    print(json.dumps({"result": "pass"}))
except LadderError as exc:
    print(json.dumps({"result": f"{type(exc).__name__}: {exc}"}))
"""


@pytest.mark.slow
def test_importing_triton_before_start_is_explained():
    found = run_script(EARLY_IMPORT, interpret=False)
    assert "Restart the notebook's kernel and run the setup cell first" in found["result"], found


COMPILED = r"""
import json, time
import triton
from triton.backends.compiler import GPUTarget
from submissions.build import launchers

POINTERS = {"LSE": "*fp32", "DELTA": "*fp32"}
SCALARS = {"N": "i32", "qk_scale": "fp32", "sm_scale": "fp32"}

def compile_for(fn, constexprs, cc, **options):
    signature = {a: "constexpr" if a in constexprs else SCALARS.get(a, POINTERS.get(a, "*fp16"))
                 for a in fn.arg_names}
    src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", cc, 32), options=options)

ns = launchers("ch06", "correct", ["attention-solution", "backward-solution"])
start = time.perf_counter()
built = []
for cc in (80, 90):
    for d, causal in ((64, True), (128, False)):
        k = compile_for(ns["flash_attention_kernel"], dict(D=d, BLOCK_M=128, BLOCK_N=64, CAUSAL=causal), cc,
                        num_warps=8, num_stages=3)
        built.append([f"forward sm_{cc} D={d} causal={causal}", k.metadata.shared])
import triton.language as tl
for cc in (80, 90):
    for name in ("attention_fwd_lse_kernel", "attention_bwd_dkdv_kernel", "attention_bwd_dq_kernel"):
        k = compile_for(ns[name], dict(D=128, BLOCK_M=64, BLOCK_N=64, CAUSAL=True, ACC=tl.float32), cc, num_warps=4)
        built.append([f"{name} sm_{cc} D=128", k.metadata.shared])
k = compile_for(ns["attention_bwd_delta_kernel"], dict(D=64, BLOCK_M=64, ACC=tl.float32), 90, num_warps=4)
built.append(["attention_bwd_delta_kernel sm_90", max(k.metadata.shared, 1)])
print(json.dumps({"built": built, "seconds": time.perf_counter() - start}))
"""


@pytest.mark.slow
def test_solution_kernels_compile_for_sm80_and_sm90_without_a_gpu():
    found = run_script(COMPILED, interpret=False)
    assert len(found["built"]) == 11
    for name, shared in found["built"]:
        assert 0 < shared <= 100 * 1024, f"{name}: {shared} bytes of shared memory won't fit smaller GPUs"


# ------------------------------------------------------------------- ladder check on a CPU

@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["06_flash_attention"], indirect=True)
def test_solution_on_cpu_grades_correctness_and_says_no_gpu_for_speed_and_memory(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid in ("napkin-test", "tiled-test", "attention-visible", "attention-hidden", "diagnose-test",
                "backward-visible", "backward-hidden", "backward-gradcheck"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    for gid in ("attention-speed", "causal-speed", "backward-speed"):
        assert cells[gid]["error"]["ename"] == "NoGPUError", cells[gid]
        assert "no GPU: speed not measured" in cells[gid]["error"]["evalue"]
    for gid in ("attention-memory", "backward-memory"):
        assert "no GPU: memory not measured" in cells[gid]["error"]["evalue"]
    assert nb["score"] == 13 and nb["max_score"] == 22


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
def test_released_notebook_on_cpu_fails_every_graded_cell_with_not_implemented():
    code, nb, cells = ladder_check_one(RELEASE)
    assert code == 1 and nb["score"] == 0 and len(cells) == 13
    for c in cells.values():
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]


# ------------------------------------------------------------------------------------ GPU

@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert nb["score"] == 22


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_released_notebook_fails_every_graded_cell_with_not_implemented():
    code, nb, cells = ladder_check_one(RELEASE)
    assert code == 1
    for c in cells.values():
        assert c["error"] and c["error"]["ename"] == "NotImplementedYet", c


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_scores_stored_by_triton_fail_memory_and_speed(tmp_path):
    _, _, cells = ladder_check_one(build("ch06", "06_flash_attention", "naive_triton", tmp_path / "naive_triton.ipynb"))
    assert cells["attention-visible"]["passed"] and cells["attention-hidden"]["passed"]
    assert "O(N) budget" in cells["attention-memory"]["error"]["evalue"], cells["attention-memory"]
    assert "below the bar" in cells["attention-speed"]["error"]["evalue"], cells["attention-speed"]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_causal_without_skipping_fails_only_the_causal_speed_cell(tmp_path):
    _, _, cells = ladder_check_one(build("ch06", "06_flash_attention", "no_skip", tmp_path / "no_skip.ipynb"))
    assert "below the bar" in cells["causal-speed"]["error"]["evalue"], cells["causal-speed"]
    assert all(c["passed"] for gid, c in cells.items() if gid != "causal-speed"), cells


@pytest.mark.gpu
def test_gpu_memory_check_tells_flash_from_stored_scores():
    from submissions.build import launchers

    found = ch06.check_attention_memory(launchers("ch06", "correct", ["attention-solution"])["attention"])
    assert all(used == 0 for used in found.values()), found
    with pytest.raises(CheckFailed, match="O\\(N\\) budget"):
        ch06.check_attention_memory(launchers("ch06", "naive_triton", ["attention-solution"])["attention"])


@pytest.mark.gpu
def test_gpu_backward_memory_check_tells_recomputed_from_stored_probabilities():
    from submissions.build import launchers

    found = ch06.check_backward_memory(launchers("ch06", "correct", ["backward-solution"])["attention_backward"])
    assert all(used <= ch06.memory_budget(size) for (size, _), used in found.items()), found
    with pytest.raises(CheckFailed, match="O\\(N\\) budget"):
        ch06.check_backward_memory(launchers("wrong", "backward_stores_p", ["backward-solution"])["attention_backward"])


# ------------------------------------------------------------------------------------ stretch 1b's bars

# The H100 record the sm_90 bars were set from (the notebook quotes it), and the H200 record that checked them.
FAST_RECORDS = [ROOT / f"assets/results/calibration/top-rungs/{gpu}/ch06-tma/ch06_gpu.json" for gpu in ("h100", "h200")]


def _fast_rows(record) -> dict:
    return {row["rung"]: sorted(run["speedup"] for run in row["runs"]) for row in json.loads(record.read_text())["rows"]}


def test_stretch_fast_bars_on_hopper_separate_the_rungs_of_their_records_and_the_text_quotes_them():
    """Each case's sm_90 bar lies between the ten runs of exercise 6's solution and the ten of the tuned
    forward, on the H100 it was set from and on an H200; off Hopper the bar is the target, 1.0x; and the
    notebook's table quotes the H100 record's ranges."""
    from grader.harness.bars import bar_for

    text = _cells()["stretch-fast-md"]
    for record in FAST_RECORDS:
        rows = _fast_rows(record)
        for d, causal in ch06.FAST_CASES:
            key = ch06.fast_bar_key(d, causal)
            tuned = rows[f"6-stretch-fast D={d} causal={causal} (attention_fast)"]
            below = rows[f"6-stretch-fast D={d} causal={causal} (exercise 6 solution)"]
            assert len(tuned) == len(below) == 10
            bar = bar_for(key, "sm_90").bar
            assert below[-1] < bar < tuned[0], (record, key, below[-1], bar, tuned[0])
            assert bar_for(key, "sm_80").bar == 1.0
            if record == FAST_RECORDS[0]:
                case = f"D = {d}{', causal' if causal else ''} |"
                quoted = f"{case} {tuned[0]:.2f}–{tuned[-1]:.2f}× | {below[0]:.2f}–{below[-1]:.2f}× |"
                assert quoted in text, quoted


def test_plot_fast_draws_each_case_against_its_own_bar(capsys):
    """The plot after stretch 1b's check: one bar per case at its speedup, a dashed line at that case's pass
    bar, SDPA's own choice as a dot at its ratio; and a sentence, not a figure, before the check has run."""
    import matplotlib
    matplotlib.use("Agg")
    from types import SimpleNamespace

    assert ch06.plot_fast(None) is None
    assert "run the stretch 1b cell on a GPU first" in capsys.readouterr().out
    results = [SimpleNamespace(speedup=1.5 + i / 10, bar=1.4 + i / 100, ms=1.0, others={"torch SDPA (own)": 0.9},
                               title=f"tuned attention forward, D={d}, case {i}", baseline_name="FA2", gpu="GPU")
               for i, d in enumerate((64, 64, 128, 128))]
    fig = ch06.plot_fast(results)
    ax = fig.axes[0]
    assert [round(p.get_height(), 3) for p in ax.patches] == [1.5, 1.6, 1.7, 1.8]
    bars = [round(seg[0][1], 3) for c in ax.collections for seg in c.get_segments()]
    assert bars == [1.4, 1.41, 1.42, 1.43]
    assert [c.get_label() for c in ax.collections][0] == "pass bar"
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(dots) == 4 and all(round(line.get_ydata()[0], 3) == 0.9 for line in dots)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"D={d}, case {i}" for i, d in enumerate((64, 64, 128, 128))]
