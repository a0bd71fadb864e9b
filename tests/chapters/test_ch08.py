"""Chapter 8 (should you write this kernel?): the decision exercise and its answer key on the CPU, the
block's reference and tolerance, the solution and students under Triton's interpreter, the notebook
through `ladder check`, and the block on a GPU."""


import pytest
import torch
from conftest import CHECK_OUTCOME, HAS_GPU, ROOT, ladder_check_one, run_script

from grader.chapters import ch08
from grader.errors import CheckFailed, NotImplementedYet

SOLUTION = ROOT / "solutions/08_should_you_write_it/08_should_you_write_it.ipynb"
BLOCK_CELLS = ["matmul-paste", "attention-paste", "norm-paste", "block-solution"]


def stub(*args):
    raise NotImplementedError()


# ------------------------------------------------------------------------------ 8a: the decision

def test_answer_key_covers_every_reason_and_the_ceiling_cap():
    visible = [ch08.decide(row, s) for row, s in ch08.VISIBLE_CASES]
    assert {reason for _, reason, _ in visible} == set(ch08.REASONS)
    assert [w for w, r, _ in visible] == [r == ch08.WRITE for _, r, _ in visible]
    capped = [(row, s) for row, s in ch08.VISIBLE_CASES if row.ceiling / row.achieved < s and row.share >= ch08.MIN_SHARE]
    assert capped, "no visible row shows the ceiling capping a proposed speedup"
    hidden = {row.op: ch08.decide(row, s) for row, s in ch08.HIDDEN_CASES}
    assert hidden["exactly hot"][1] != ch08.NOT_HOT and hidden["just cold"][1] == ch08.NOT_HOT
    assert hidden["exactly at 60%"][1] == ch08.NO_HEADROOM and hidden["just under 60%"][1] == ch08.WRITE
    assert hidden["hot, unstable, no headroom"][1] == ch08.NO_HEADROOM   # headroom is tested before the shape
    assert hidden["slower kernel"][2] < 1 and hidden["the whole block"][2] == pytest.approx(4.0)


def test_amdahl_limits():
    assert ch08.amdahl_reference(0.1, 1e12) == pytest.approx(1 / 0.9)
    assert ch08.amdahl_reference(0.0, 100) == 1.0
    assert ch08.amdahl_reference(1.0, 3.0) == pytest.approx(3.0)


def _learner_decide(row, speedup):
    return ch08.decide(row, speedup)


def test_decision_check_accepts_the_key_and_lists(capsys):
    ch08.check_amdahl(ch08.amdahl_reference)
    ch08.check_worth_writing(_learner_decide, hidden=True)
    ch08.check_worth_writing(lambda row, s: list(ch08.decide(row, s)))
    out = capsys.readouterr().out
    assert "✓ 8a amdahl" in out and "16 visible and hidden rows" in out


def _headroom_first(row, s):
    write, reason, predicted = ch08.decide(row, s)
    if row.of_ceiling >= ch08.MAX_OF_CEILING:
        return False, ch08.NO_HEADROOM, predicted
    return write, reason, predicted


def _uncapped(row, s):
    write, reason, _ = ch08.decide(row, s)
    return write, reason, ch08.amdahl_reference(row.share, s)


@pytest.mark.parametrize("fn, hidden, message", [
    (_headroom_first, False, (r"(?s)bias \+ GELU \(eager\): 9% of the block.*returned \(False, 'no headroom', \.\.\.\), "
                              r"expected \(False, 'not hot', .*an op below 10% of the time is not hot")),
    (_uncapped, False, r"(?s)speedup=3\) for the row\n  matmuls \(4, cuBLAS\).*at best matches the measured ceiling .*1\.212x"),
    (lambda row, s: (True, "yes", 1.0), False, r"gave the reason 'yes', which is none of"),
    (lambda row, s: ch08.decide(row, s)[:2], False, r"should return a tuple \(write, reason, predicted\)"),
    (lambda row, s: ch08.decide(row, s) if row.share != 0.10 else (False, ch08.NOT_HOT, 1.0), True,
     r"for the row\n  exactly hot: 10% of the block"),
])
def test_decision_check_names_the_first_wrong_row(fn, hidden, message):
    with pytest.raises(CheckFailed, match=message):
        ch08.check_worth_writing(fn, hidden=hidden)


def test_amdahl_check_rejects_and_hints():
    with pytest.raises(CheckFailed, match=r"amdahl\(share=0.5, speedup=2\) returned 1.5, expected 1.33333"):
        ch08.check_amdahl(lambda p, s: 1 + p)


def test_stubs_are_not_written_yet():
    with pytest.raises(NotImplementedYet, match="exercise 8a is not written yet"):
        ch08.check_amdahl(stub)
    with pytest.raises(NotImplementedYet, match="exercise 8a is not written yet"):
        ch08.check_worth_writing(stub)


# ------------------------------------------------------------------------------ 8b: the block

def _inputs(size, dtype=torch.float16, seed=0):
    return ch08.make_inputs(size, torch.Generator().manual_seed(seed), "cpu", dtype)


@pytest.mark.parametrize("size", [(2, 33, 128), (1, 64, 64)])
def test_eager_block_in_float64_is_the_reference(size):
    x = _inputs(size, torch.float64)
    m, r2 = ch08.eager_block(*x)
    torch.testing.assert_close(torch.stack((m, r2)), ch08.block_reference(*x), rtol=1e-12, atol=1e-12)


def test_tolerance_passes_eager_fp16_and_fails_a_norm_without_its_weight():
    """Eager in fp16 (the rounding every correct block does) stays within a third of the tolerance;
    dropping the norm's weight (w_norm ~ 1 +- 0.1) does not."""
    rtol, atol = ch08._tolerance(None)
    for size in ch08.VISIBLE_SIZES[:2]:
        x = _inputs(size)
        want = ch08.block_reference(*(t.double() for t in x))
        got = torch.stack(ch08.eager_block(*x)).double()
        torch.testing.assert_close(got, want, rtol=rtol / 3, atol=atol / 3)
        no_weight = list(x)
        no_weight[2] = torch.ones_like(x[2])
        no_weight[5] = torch.ones_like(x[5])
        bad = torch.stack(ch08.eager_block(*no_weight)).double()
        with pytest.raises(AssertionError):
            torch.testing.assert_close(bad, want, rtol=rtol, atol=atol)


def test_flops_and_bytes_at_the_timing_size():
    b, n, c = ch08.SPEED_SIZE
    matmuls = 2 * b * n * c * 12 * c
    attention = 4 * b * (c // 64) * n * n * 64
    assert ch08.block_flops(ch08.SPEED_SIZE) == matmuls + attention
    assert ch08.block_bytes(ch08.SPEED_SIZE) > 4 * 2 * b * n * c


def test_profile_rows_share_and_rate():
    costs = [ch08.OpCost("mm", 3.0, 3e9 * 600, "compute"), ch08.OpCost("norm", 1.0, 1e-3 * 1.5e12, "memory")]
    mm, norm = ch08.profile_rows(costs, copy_gbps=3000.0, fp16_tflops=700.0, unstable=("norm",))
    assert mm.share == pytest.approx(0.75) and mm.achieved == pytest.approx(600.0) and mm.ceiling == 700.0
    assert norm.achieved == pytest.approx(1500.0) and norm.of_ceiling == pytest.approx(0.5)
    assert mm.stable_shape and not norm.stable_shape


def test_recorded_h100_profile_is_shipped_and_consistent():
    rows, record = ch08.recorded_rows()
    assert record["gpu"].startswith("NVIDIA H100"), record["gpu"]
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert {r.op for r in rows} == set(ch08.op_work(ch08.SPEED_SIZE))
    assert all(0 < r.of_ceiling < 1.3 for r in rows), [(r.op, r.of_ceiling) for r in rows]
    assert "Self CUDA" in (ch08.RECORDED / "profile.txt").read_text()
    code = (ch08.RECORDED / "inductor_code.py").read_text()
    assert ch08.triton_kernels(code) and "@triton.jit" in code


def test_summaries_of_recorded_inductor_code(capsys):
    ch08.summarize_inductor((ch08.RECORDED / "inductor_code.py").read_text())
    out = capsys.readouterr().out
    assert "Inductor wrote" in out and "Left to libraries" in out


# --------------------------------------------------------- the kernels, on a CPU, in subprocesses

INTERPRETED = CHECK_OUTCOME + r"""
from grader.chapters import ch08
from submissions.build import launchers

cells = ["decide-solution", "matmul-paste", "attention-paste", "norm-paste", "block-solution"]
found = {}
for name in ("correct", "unfused", "wrong"):
    ns = launchers("ch08", name, cells)
    found[name] = {"amdahl": outcome(ch08.check_amdahl, ns["amdahl"]),
                   "decide": outcome(ch08.check_worth_writing, ns["worth_writing"], hidden=True),
                   "block": outcome(ch08.check_block, ns["block"], trials=1),
                   "speed": outcome(ch08.check_block_speed, ns["block"]) if name == "correct" else None}
ns = launchers("ch08", "correct", cells)
exec('''
def torch_projection_block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out):
    B, N, C = x.shape
    rows = B * N
    r1, n1 = torch.empty(rows, C, dtype=x.dtype), torch.empty(rows, C, dtype=x.dtype)
    add_rmsnorm(x.view(rows, C), residual.view(rows, C), w_norm1, n1, r1)
    qkv = n1 @ w_qkv   # torch computes with the grader's weights: not allowed
    block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out)
''', ns)
found["torch_projection"] = outcome(ch08.check_block, ns["torch_projection_block"], trials=1)
print(json.dumps(found))
"""


@pytest.mark.slow
def test_solution_and_students_under_the_triton_interpreter():
    found = run_script(INTERPRETED)
    correct, unfused, wrong = found["correct"], found["unfused"], found["wrong"]
    assert correct["amdahl"] == correct["decide"] == correct["block"] == "pass", correct
    assert correct["speed"].startswith("NoGPUError: no GPU: speed not measured for exercise 8b"), correct["speed"]
    assert unfused["block"] == "pass", unfused
    assert "amdahl(share=0.5, speedup=2)" in wrong["amdahl"], wrong
    assert wrong["block"].startswith("CheckFailed") and "wrong result" in wrong["block"], wrong
    assert "torch computed with the grader's tensors" in found["torch_projection"], found["torch_projection"]


# ------------------------------------------------------------------- ladder check on a CPU

@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["08_should_you_write_it"], indirect=True)
def test_solution_on_cpu_grades_8a_and_block_correctness_and_says_no_gpu_for_speed(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid in ("amdahl-test", "decide-visible", "decide-hidden", "block-visible", "block-hidden", "diagnose-test"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    assert cells["block-speed"]["error"]["ename"] == "NoGPUError", cells["block-speed"]
    assert nb["score"] == 9 and nb["max_score"] == 11


# ------------------------------------------------------------------------------ 8b: fusion, from the trace

def _traced(*rows):
    """A KernelTime as the device trace of a block's timed calls gives it: (name, launches per call)."""
    from grader.harness.kernel_time import KernelRow, KernelTime

    return KernelTime(calls=40, rows=[KernelRow(name, launches, 0.1) for name, launches in rows], busy_ms=2.0)


# The kernels of the solution block and of its unfused rung (tests/submissions/ch08), per call.
FUSED_BLOCK = (("matmul_kernel", 3), ("matmul_bias_gelu_kernel", 1), ("flash_attention_kernel", 1),
               ("add_rmsnorm_kernel", 2))
UNFUSED_BLOCK = (("matmul_kernel", 4), ("bias_gelu_kernel", 1), ("flash_attention_kernel", 1), ("add_kernel", 2),
                 ("rmsnorm_kernel", 2))


def test_fusion_passes_the_fused_block_and_fails_the_unfused_one_for_its_reason(capsys):
    ch08.require_fused(_traced(*FUSED_BLOCK))
    assert "✓ 8b fusion: 7 launches" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"launched 10 of your kernels per call \(matmul_kernel ×4, .*add_kernel ×2") as exc:
        ch08.require_fused(_traced(*UNFUSED_BLOCK))
    assert exc.value.reason == "not-fused"
    # One piece of glue left out is enough: the GELU as its own kernel after a plain matmul.
    with pytest.raises(CheckFailed, match="launched 8") as exc:
        ch08.require_fused(_traced(("matmul_kernel", 4), ("bias_gelu_kernel", 1), ("flash_attention_kernel", 1),
                                   ("add_rmsnorm_kernel", 2)))
    assert exc.value.reason == "not-fused"


def test_fusion_without_a_trace_is_unchecked_and_scored_by_the_policy(monkeypatch, capsys):
    from grader.harness.kernel_time import KernelTime

    monkeypatch.setenv("LADDER_UNCHECKED", "zero")
    with pytest.raises(CheckFailed, match="kernel launches in the device trace could not run.*CUPTI unavailable") as exc:
        ch08.require_fused(KernelTime.untraced("CUPTI unavailable"))
    assert exc.value.reason == "unchecked"
    with pytest.raises(CheckFailed, match="no device trace"):
        ch08.require_fused(None)
    monkeypatch.setenv("LADDER_UNCHECKED", "full")
    ch08.require_fused(None)
    assert "LADDER_UNCHECKED=full" in capsys.readouterr().out


@pytest.mark.skipif(HAS_GPU, reason="the message of a machine without a GPU")
def test_host_bound_cell_without_a_gpu_says_where_the_figures_come_from(capsys):
    assert ch08.measure_host_bound() is None
    out = capsys.readouterr().out
    assert "assets/results/notebooks/text-facts/h100/host-bound.txt" in out
    assert (ROOT / "assets/results/notebooks/text-facts/h100/host-bound.txt").is_file()


# ------------------------------------------------------------------------------------ GPU

@pytest.mark.gpu
def test_gpu_unfused_block_fails_for_its_fusion_not_its_speed():
    """The unfused rung measured above the 8b bar (assets/results/calibration/ch08-h100/calibration-unfused.json); the
    grade now rests on the trace's launch count, so it must fail with "not-fused" whatever its speed."""
    from submissions.build import launchers

    with pytest.raises(CheckFailed) as exc:
        ch08.check_block_speed(launchers("ch08", "unfused", BLOCK_CELLS)["block"])
    assert exc.value.reason in ("not-fused", "below-bar"), exc.value
    if exc.value.reason == "not-fused":
        assert "launched 10 of your kernels" in str(exc.value)


@pytest.mark.gpu
def test_gpu_solution_and_unfused_blocks_are_correct_and_torch_is_refused():
    from submissions.build import launchers

    for name in ("correct", "unfused"):
        ch08.check_block(launchers("ch08", name, BLOCK_CELLS)["block"])
    ns = launchers("ch08", "correct", BLOCK_CELLS)

    def cublas_down_projection(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out):
        ns["block"](x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out)
        hidden = torch.empty(x.shape[0] * x.shape[1], w_up.shape[1], device=x.device, dtype=x.dtype)
        torch.mm(hidden, torch.empty_like(w_down), out=out[0].view(-1, x.shape[2]))  # cuBLAS on our own buffers

    with pytest.raises(CheckFailed, match="(?i)only your kernel may compute"):
        ch08.check_block(cublas_down_projection, trials=1)


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert nb["score"] == 11 == nb["max_score"]
