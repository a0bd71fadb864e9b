"""Chapter 10 (decode attention over a paged KV cache): the napkin math and its key, the inputs (layouts, poison,
shared prefixes), the float64 reference against a plain per-head computation, torch's two ways (gather + SDPA and
FlexAttention's paged block mask) against it, the tolerance against the solution's arithmetic and the mistakes it
must reject, the cases the hidden tests promise, the solution and students under Triton's interpreter, `ladder
check` of the solution on a CPU, and the verdicts on a GPU (skipped without one)."""

import dataclasses
import math
import re
import warnings

import pytest
import torch

from conftest import CHECK_OUTCOME, HAS_GPU, ROOT, ladder_check_one, run_script
from grader.chapters import ch10
from grader.cuda import archs
from grader.errors import CheckFailed, LadderError, NotImplementedYet
from grader.harness import correctness

SOLUTION = ROOT / "solutions/10_decode_attention/10_decode_attention.ipynb"


def stub(*args):
    raise NotImplementedError()


def _inputs(case, seed=0):
    return ch10.make_inputs(case, torch.Generator().manual_seed(seed), "cpu")


# ------------------------------------------------------------------------------------------ 10.0

def _right_bytes(lengths, h, hkv, d):
    return 2 * sum(lengths) * hkv * d * 2 + 2 * len(lengths) * h * d * 2


def test_napkin_math_check_accepts_the_key_and_names_the_wrong_call(capsys):
    floor = lambda nbytes, gbps: nbytes / gbps / 1e3  # noqa: E731
    ch10.check_napkin_math(_right_bytes, floor, lambda h, hkv, d: h / hkv)
    assert "✓ 10.0" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"decode_bytes\(\[1\], 1, 1, 64\).*K and V"):
        ch10.check_napkin_math(lambda lengths, h, hkv, d: _right_bytes(lengths, h, hkv, d) - sum(lengths) * hkv * d * 2,
                               floor, lambda h, hkv, d: h / hkv)
    with pytest.raises(CheckFailed, match=r"time_floor_us\(1073741824, 4000.0\).*microseconds"):
        ch10.check_napkin_math(_right_bytes, lambda nbytes, gbps: nbytes / gbps, lambda h, hkv, d: h / hkv)
    with pytest.raises(CheckFailed, match=r"intensity\(32, 8, 128\)"):
        ch10.check_napkin_math(_right_bytes, floor, lambda h, hkv, d: 1.0)
    with pytest.raises(NotImplementedYet, match="10.0 is not written yet"):
        ch10.check_napkin_math(stub, floor, stub)


def test_the_bytes_count_every_cached_token_once_per_kv_head():
    case = ch10.Decode((3, 5), heads=8, kv_heads=2, head_dim=64)
    assert ch10.cache_bytes(case) == 2 * 8 * 2 * 64 * 2
    assert ch10.decode_bytes(case) == ch10.cache_bytes(case) + 2 * 2 * 8 * 64 * 2
    assert ch10.decode_bytes(ch10.SPEED) == _right_bytes(ch10.SPEED.lengths, 32, 8, 128)
    mha = dataclasses.replace(ch10.SPEED, kv_heads=32)
    assert ch10.cache_bytes(mha) == ch10.SPEED.group * ch10.cache_bytes(ch10.SPEED)   # GQA divides by the group


# ------------------------------------------------------------------------------------------ inputs

def test_cases_refuse_shapes_no_kernel_could_meet():
    with pytest.raises(ValueError, match="evenly"):
        ch10.Decode((4,), heads=6, kv_heads=4)
    with pytest.raises(ValueError, match="at least 1"):
        ch10.Decode((0, 3))
    with pytest.raises(ValueError, match="shared prefix"):
        ch10.Decode((10, 100), shared=1)


def test_tables_in_order_shuffled_and_shared():
    case = ch10.Decode((40, 17, 1), heads=4, kv_heads=2, order="in order")
    _, k_cache, _, table, lengths = _inputs(case)
    assert table.dtype == torch.int32 and lengths.tolist() == [40, 17, 1]
    mp = case.max_pages
    assert table.tolist() == [[0, 1, 2], [mp, mp + 1, -1], [2 * mp, -1, -1]]
    shuffled = dataclasses.replace(case, order="shuffled", lengths=(400, 170, 100))
    table = _inputs(shuffled, seed=3)[3]
    used = table[table >= 0]
    assert used.unique().numel() == used.numel(), "no page is given twice without a shared prefix"
    assert table[0, :25].tolist() != list(range(25)), "shuffled is not in order"
    shared = dataclasses.replace(shuffled, shared=4)
    table = _inputs(shared, seed=4)[3]
    assert (table[:, :4] == table[0, :4]).all() and table[0, 4:].tolist() != table[1, 4:].tolist()
    # however the table is laid out, a kernel that guesses page b * max_pages + j stays inside the pool
    for c in (case, shuffled, shared):
        assert ch10.pool_pages(c) > c.batch * c.max_pages


def test_only_what_a_query_reads_is_finite():
    case = ch10.Decode((20, 18), heads=4, kv_heads=2, head_dim=64, shared=1)
    q, k_cache, v_cache, table, lengths = _inputs(case, seed=5)
    finite = torch.isfinite(k_cache).all(-1).all(-1)        # (pages, P): every KV head of a slot alike
    assert torch.equal(finite, torch.isfinite(v_cache).all(-1).all(-1))
    expected = torch.zeros_like(finite)
    for b, n in enumerate(case.lengths):
        for t in range(n):
            expected[table[b, t // case.page], t % case.page] = True
    assert torch.equal(finite, expected), "live slots finite, every other slot poisoned"
    assert (k_cache[~finite] == float("inf")).all() and torch.isfinite(q).all()


def test_inputs_push_scores_past_where_exp_overflows():
    case = ch10.Decode((300,), heads=8, kv_heads=2, head_dim=128)
    q, k_cache, v_cache, table, lengths = (t.double() for t in _inputs(case, seed=6))
    k, _ = ch10.gathered(k_cache, v_cache, table, lengths, 0)
    scores = torch.einsum("hd,hnd->hn", q[0].view(2, 4, 128)[:, 0], k) / math.sqrt(128)
    assert scores.abs().max() > 100, "a softmax without the running max must overflow on these inputs"


# ------------------------------------------------------------------------------------------ the reference

def _per_head(q, k_cache, v_cache, table, lengths, window=1):
    """Attention one (sequence, query head, window position) at a time, the pages read token by token."""
    qw = q if q.dim() == 4 else q[:, None]
    b, w, h, d = qw.shape
    p, hkv = k_cache.shape[1], k_cache.shape[2]
    out = torch.empty_like(qw)
    for i in range(b):
        n = int(lengths[i])
        rows = [(int(table[i, t // p]), t % p) for t in range(n)]
        for head in range(h):
            kv = head // (h // hkv)
            k = torch.stack([k_cache[pg, s, kv] for pg, s in rows])
            v = torch.stack([v_cache[pg, s, kv] for pg, s in rows])
            for j in range(w):
                seen = n - w + j + 1
                weights = torch.softmax(k[:seen] @ qw[i, j, head] / math.sqrt(d), 0)
                out[i, j, head] = weights @ v[:seen]
    return out if q.dim() == 4 else out[:, 0]


@pytest.mark.parametrize("case", [ch10.Decode((1, 37, 16), heads=8, kv_heads=2, head_dim=16),
                                  ch10.Decode((33, 40), heads=4, kv_heads=1, head_dim=16, shared=2, page=8),
                                  ch10.Decode((12, 5), heads=6, kv_heads=3, head_dim=16, window=4)],
                         ids=["gqa", "shared-prefix", "window"])
def test_reference_is_attention_over_the_gathered_cache_one_head_at_a_time(case):
    inputs = [t.double() for t in _inputs(case, seed=7)]
    torch.testing.assert_close(ch10.decode_reference(*inputs), _per_head(*inputs), rtol=1e-12, atol=1e-12)


def test_a_window_of_one_is_plain_decode():
    case = ch10.Decode((9, 30), heads=4, kv_heads=2, head_dim=16)
    q, *rest = (t.double() for t in _inputs(case, seed=8))
    torch.testing.assert_close(ch10.decode_reference(q[:, None], *rest)[:, 0], ch10.decode_reference(q, *rest))


def test_gather_sdpa_is_the_reference_despite_the_poisoned_slots():
    case = ch10.Decode((70, 1, 33), heads=8, kv_heads=2, head_dim=64, shared=0)
    inputs = _inputs(case, seed=9)
    exact = ch10.decode_reference(*(t.double() for t in inputs))
    got = ch10.gather_sdpa(*(t.float() if t.is_floating_point() else t for t in inputs))[:, :, 0]
    torch.testing.assert_close(got.double(), exact, rtol=1e-4, atol=1e-4)
    window = ch10.Decode((30, 9), heads=8, kv_heads=2, head_dim=64, window=4)
    inputs = _inputs(window, seed=10)
    exact = ch10.decode_reference(*(t.double() for t in inputs))
    got = ch10.window_gather_sdpa(*(t.float() if t.is_floating_point() else t for t in inputs))
    torch.testing.assert_close(got.transpose(1, 2).double(), exact, rtol=1e-4, atol=1e-4)


def _flex(*inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ch10.flex_paged(compiled=False)(*inputs)


def test_flex_attentions_paged_block_mask_names_each_sequences_pages_and_length():
    """FlexAttention (eager, on the CPU: torch runs it without compiling, slowly) through the chapter's paged block
    mask gives the reference, shared prefix included, on a cache whose stale slots are finite. On the grader's own
    inputs it returns NaN: it computes every slot of a page it visits and masks their scores, so the +inf value of a
    slot past the length meets a weight of 0 (the trap the chapter warns of), which is why it is timed beside the
    verdict and never checked."""
    case = ch10.Decode((40, 17), heads=4, kv_heads=2, head_dim=16, page=16, shared=1)
    q, k_cache, v_cache, table, lengths = _inputs(case, seed=11)
    q, k_cache, v_cache = q.float(), k_cache.float(), v_cache.float()
    assert torch.isnan(_flex(q, k_cache, v_cache, table, lengths)).any()
    stale = [c.nan_to_num(posinf=0.0) for c in (k_cache, v_cache)]
    exact = ch10.decode_reference(*(t.double() for t in (q, *stale, table, lengths)))
    got = _flex(q, *stale, table, lengths)
    torch.testing.assert_close(got[:, :, 0].double(), exact, rtol=1e-4, atol=1e-4)


def test_flex_attentions_mask_has_the_blocks_its_gpu_decoding_kernel_takes():
    """What a CPU can check of the compiled baseline on a GPU: torch's decoding kernel for FlexAttention
    (torch/_inductor/kernel/flex/flex_decoding.py) tiles a KV head's group of query heads in BLOCK_M rows, the group's
    size rounded up to a power of two and at least 16, and keeps only configurations whose sparse query block is a
    multiple of BLOCK_M; its key tile shrinks to the key block (a page) where that is smaller. Query blocks of 1 left it
    no configuration on an H200 (assets/results/notebooks/ch10-h200/README.md)."""
    assert {c.group for c in ch10.HIDDEN} >= {c.group for c in (ch10.SPEED, ch10.SPLIT_SPEED, *ch10.VISIBLE)}
    for case in ch10.HIDDEN:   # every group size and both page sizes of the chapter, in pools of a few hundred pages
        table = torch.zeros((case.batch, case.max_pages), dtype=torch.int32)
        mask = ch10.paged_block_mask(table, torch.tensor(case.lengths), ch10.pool_pages(case), case.page)
        block_m = max(16, 1 << (case.group - 1).bit_length())
        assert mask.BLOCK_SIZE == (ch10.FLEX_Q_BLOCK, case.page) and ch10.FLEX_Q_BLOCK % block_m == 0, case
        assert mask.shape[-2:] == (1, ch10.pool_pages(case) * case.page)


def test_a_torch_without_what_the_flex_baseline_needs_is_named_in_the_report(monkeypatch):
    """Where this torch has no FlexAttention, or one whose block masks cannot span a paged pool, the speed report says
    so in words beside gather + SDPA, and nothing is compiled."""
    import sys

    from torch.nn.attention import flex_attention

    from grader.harness.exercise import reported_beside

    assert ch10.flex_unavailable() is None   # this torch has it: the tests above ran it
    inputs = _inputs(ch10.CPU_HIDDEN[0])
    name = "FlexAttention (paged block mask)"
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", None)   # as on a torch without it
    assert ch10.DECODE.others == {name: ch10.flex_paged}
    others, unavailable = reported_beside(ch10.DECODE, inputs, "cpu")
    assert not others and unavailable == {
        name: f"this torch ({torch.__version__}) has no FlexAttention (torch.nn.attention.flex_attention)"}
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", flex_attention)

    class OldBlockMask:
        @classmethod
        def from_kv_blocks(cls, kv_num_blocks, kv_indices, BLOCK_SIZE=128, mask_mod=None):   # noqa: N803
            raise AssertionError("not called")

    monkeypatch.setattr(flex_attention, "BlockMask", OldBlockMask)
    _, unavailable = reported_beside(ch10.DECODE, inputs, "cpu")
    assert "BlockMask.from_kv_blocks takes no seq_lengths" in unavailable[name], unavailable


# ------------------------------------------------------------------------------------------ tolerance

def _emulated(q, k_cache, v_cache, table, lengths, block=64, p_dtype=torch.float16, scale=None):
    """The solution's arithmetic in torch: fp32 scores, the online softmax over tiles of `block` tokens, P rounded to
    `p_dtype` for P V, fp32 accumulator, fp16 out."""
    b, h, d = q.shape
    hkv = k_cache.shape[2]
    out = torch.empty_like(q)
    for i in range(b):
        k, v = ch10.gathered(k_cache, v_cache, table, lengths, i)
        qi = q[i].float().view(hkv, h // hkv, d)
        m = torch.full((hkv, h // hkv), float("-inf"))
        l = torch.zeros(hkv, h // hkv)
        acc = torch.zeros(hkv, h // hkv, d)
        for j in range(0, k.shape[1], block):
            s = torch.einsum("kgd,knd->kgn", qi, k[:, j:j + block].float()) * (scale or 1 / math.sqrt(d))
            m_new = torch.maximum(m, s.amax(-1))
            pr = torch.exp(s - m_new[..., None])
            l = l * torch.exp(m - m_new) + pr.sum(-1)
            acc = acc * torch.exp(m - m_new)[..., None] + torch.einsum(
                "kgn,knd->kgd", pr.to(p_dtype).float(), v[:, j:j + block].float())
            m = m_new
        out[i] = (acc / l[..., None]).reshape(h, d).half()
    return out


def _worst(got, want):
    rtol, atol = ch10.TOLERANCE
    return float(((got.double() - want).abs() / (atol + rtol * want.abs())).max())


def test_tolerance_passes_the_solutions_arithmetic_with_room_and_fails_a_wrong_scale():
    """P rounded to fp16 for P V (the solution), or to bf16, stays within the tolerance: a decode output averages
    thousands of rounded weights, and their errors average out (unlike chapter 6's peaked rows, where bf16 fails).
    Scores scaled by 1/D instead of 1/sqrt(D) fail by far."""
    case = ch10.Decode((3000, 1, 700), heads=32, kv_heads=8, head_dim=128)
    worst = 0.0
    for seed in range(3):
        inputs = _inputs(case, seed=20 + seed)
        want = ch10.decode_reference(*(t.double() for t in inputs))
        worst = max(worst, _worst(_emulated(*inputs), want))
        assert _worst(_emulated(*inputs, scale=1 / 128), want) > 10, "scores scaled by 1/D, not 1/sqrt(D)"
    assert worst < 0.5, worst


# ------------------------------------------------------------------------------------------ the cases

def test_the_hidden_cases_hold_what_the_notebook_promises():
    for hidden in (ch10.HIDDEN, ch10.CPU_HIDDEN):
        assert any(c.lengths == (1,) for c in hidden), "length 1"
        assert any(n % c.page for c in hidden for n in c.lengths), "lengths that are not multiples of P"
        assert any(c.order == "shuffled" for c in hidden), "tables out of order"
        assert any(c.shared for c in hidden), "a shared prefix"
        assert max(c.head_dim for c in hidden) == 128, "the largest head dimension, 128"
    assert {c.group for c in ch10.HIDDEN} >= {1, 2, 4, 8} and any(c.page != 16 for c in ch10.HIDDEN)
    assert all(c.order == "in order" for c in ch10.VISIBLE + ch10.CPU_VISIBLE), "a table-ignoring kernel passes them"
    assert all(c.order == "shuffled" for c in (ch10.SPEED, ch10.SPLIT_SPEED)), "timed as a server's pool is laid out"
    # the interpreter's cases stay small; one sequence spans more than two tiles of 64 tokens
    for case in ch10.CPU_VISIBLE + ch10.CPU_HIDDEN + ch10.SPLIT_CPU + ch10.SPLIT_CPU_HIDDEN + ch10.WINDOW_CPU:
        assert case.tokens * case.heads <= 10_000, case
    assert max(n for c in ch10.CPU_VISIBLE for n in c.lengths) > 2 * 64
    # and they still cross what the checks are about: several KV heads each shared by a group (query head h reads KV
    # head h // group, not h % H_kv), visible and split; a sequence split into chunks by the solution (256 tokens at
    # least) and by the fixed-chunk submission (512, tests/submissions/correct/ch10_10b_fixed_chunks.py)
    for cases in (ch10.CPU_VISIBLE, ch10.CPU_HIDDEN, ch10.SPLIT_CPU):
        assert any(c.kv_heads > 1 and c.group > 1 for c in cases), cases
    for cases in (ch10.SPLIT_CPU, ch10.SPLIT_CPU_HIDDEN):
        assert max(n for c in cases for n in c.lengths) > 512, cases
    assert ch10.STUB_PROBE.tokens * ch10.STUB_PROBE.heads <= min(c.tokens * c.heads for c in ch10.CPU_VISIBLE)
    assert max(ch10.SPLIT_SPEED.lengths) == 32768 and ch10.SPLIT_SPEED.batch <= 4


def test_the_speed_sizes_are_far_from_the_l2_and_the_unsplit_grid_far_from_the_sms():
    assert ch10.cache_bytes(ch10.SPEED) > 15 * 60 * 2**20 and ch10.cache_bytes(ch10.SPLIT_SPEED) > 2 * 60 * 2**20
    assert ch10.programs(ch10.SPLIT_SPEED) == 32 < 132 / 4      # 10b unsplit: under a quarter of an H200's SMs
    assert ch10.programs(ch10.SPEED) == 512


def test_the_tile_and_the_rows_fit_every_architecture():
    assert [ch10.group_rows(h, hkv) for h, hkv in ((32, 32), (32, 8), (64, 2))] == [16, 16, 32]
    with archs.targeting(archs.by_name("sm_75")):
        assert ch10.kv_tile() == 32
    with archs.targeting(archs.by_name("sm_90")):
        assert ch10.kv_tile() == 64


# --------------------------------------------------------- the kernels, on a CPU, in a subprocess

INTERPRETED = CHECK_OUTCOME + r"""
from grader.chapters import ch10
from submissions.build import launchers

cells = ["napkin-solution", "decode-solution", "split-solution", "diagnose-solution", "stretch-solution"]
checks = {   # (check, launcher, sizes)
    "decode": (ch10.check_decode, "decode_attention", None),
    "hidden": (ch10.check_decode, "decode_attention", ch10.CPU_HIDDEN),
    "split": (ch10.check_split, "decode_attention_split", None),
    "split_hidden": (ch10.check_split, "decode_attention_split", ch10.SPLIT_CPU_HIDDEN),
    "unsplit": (ch10.check_split, "decode_attention", ch10.SPLIT_CPU[:1]),   # 10a's kernel on 10b's cases
}
asked = {"wrong": ("decode", "hidden", "split", "split_hidden"), "head_per_program": ("decode", "hidden", "unsplit"),
         "page_per_step": ("decode", "hidden", "unsplit"), "correct": ("unsplit",)}
found = {}
for name, wanted in asked.items():
    ns = launchers("ch10", name, cells)
    found[name] = {cell: outcome(checks[cell][0], ns[checks[cell][1]], sizes=checks[cell][2], trials=1) for cell in wanted}
found["window"] = outcome(ch10.check_window_stretch, ns["decode_window"])   # the solution's (correct is last)
print(json.dumps(found))
"""


@pytest.mark.slow
def test_solution_rungs_and_a_wrong_student_under_the_triton_interpreter():
    """The two rungs below the solution and a wrong student through Triton's interpreter, with the solution's 10a at
    10b's size (the rung below 10b) and its stretch. The solution's own graded cells (10a and 10b, visible and hidden,
    the speed cells' "no GPU") are read from its one grading of the run, in the test below. Slow (up to 20 s on 2 cores
    without Triton's cache: three students, each compiling and interpreting 10a, and 10b for one)."""
    found = run_script(INTERPRETED)
    for name in ("correct", "head_per_program", "page_per_step"):
        assert set(found[name].values()) == {"pass"}, (name, found[name])
    assert found["window"] == "pass"
    wrong = found["wrong"]
    for cell in ("decode", "hidden", "split", "split_hidden"):
        assert wrong[cell].startswith("CheckFailed") and "wrong result" in wrong[cell], (cell, wrong[cell])


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["10_decode_attention"], indirect=True)
def test_solution_on_cpu_grades_what_a_cpu_can_and_says_no_gpu_for_the_rest(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    # Only the points a CPU cannot check are missing, none lost: `ladder check` exits 0 (grader/notebooks/points.py).
    assert code == 0 and nb["nothing_lost"] and not nb["passed"] and nb["error"] is None
    for gid in ("napkin-test", "decode-visible", "decode-hidden", "split-visible", "split-hidden", "diagnose-test"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    for gid, key in (("decode-speed", "10a"), ("split-speed", "10b")):
        assert cells[gid]["error"]["ename"] == "NoGPUError", cells[gid]
        assert cells[gid]["error"]["evalue"].startswith(f"no GPU: speed not measured for exercise {key}"), cells[gid]
    assert nb["score"] == 9 and nb["max_score"] == 13
    assert nb["lost_points"] == 0 and nb["not_checked"] == {"no-gpu": 4}


@pytest.fixture
def no_gpu(monkeypatch):
    """Behave as on a machine without a GPU, also where there is one."""
    import grader.harness.exercise as exercise

    reason = lambda: (False, "no GPU found (test)")  # noqa: E731
    monkeypatch.setattr(exercise, "gpu_or_reason", reason)
    monkeypatch.setattr(ch10, "gpu_or_reason", reason)


def test_stubs_say_not_written_yet_without_a_gpu(no_gpu):
    for check in (ch10.check_decode, ch10.check_split, ch10.check_decode_speed, ch10.check_split_speed):
        with pytest.raises(NotImplementedYet, match="not written yet"):
            check(stub)


# ------------------------------------------------------------------------------------------ GPU

@pytest.mark.gpu
def test_gpu_the_baselines_compute_decode_attention():
    """gather + SDPA and FlexAttention (compiled, with the paged block mask; finite stale slots) on the GPU, against
    float64: the report's two figures beside every verdict time real decode attention."""
    case = ch10.Decode((700, 1, 33, 2049), heads=32, kv_heads=8, head_dim=128)
    inputs = ch10.make_inputs(case, torch.Generator("cuda").manual_seed(12), "cuda")
    exact = ch10.decode_reference(*(t.double() for t in inputs))
    rtol, atol = ch10.TOLERANCE
    correctness.compare(ch10.gather_sdpa(*inputs)[:, :, 0], exact, rtol=rtol, atol=atol, what="gather + SDPA")
    q, k_cache, v_cache, table, lengths = inputs
    stale = [c.nan_to_num(posinf=0.0) for c in (k_cache, v_cache)]   # FlexAttention needs finite stale slots
    why = ch10.flex_unavailable()
    if why is not None:   # an older torch: the report says why it is not measured (the CPU test above holds it)
        with pytest.raises(LadderError, match=re.escape(why)):
            ch10.flex_paged()
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flex = ch10.flex_paged()(q, *stale, table, lengths)
    correctness.compare(flex[:, :, 0], exact, rtol=rtol, atol=atol, what="FlexAttention, paged block mask")


@pytest.mark.gpu
def test_gpu_the_solution_and_its_rungs_are_correct_at_the_timing_sizes():
    from submissions.build import launchers

    for name in ("correct", "head_per_program", "page_per_step"):
        fn = launchers("ch10", name, ["decode-solution", "split-solution"])["decode_attention"]
        ch10.check_decode(fn, sizes=[ch10._fits(ch10.SPEED)], trials=1)
    fn = launchers("ch10", "correct", ["decode-solution", "split-solution"])["decode_attention_split"]
    ch10.check_split(fn, sizes=[ch10._fits(ch10.SPLIT_SPEED)], trials=1)


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert nb["score"] == 13 == nb["max_score"]
