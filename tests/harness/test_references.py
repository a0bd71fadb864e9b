"""The course's own definitions, which every grade is measured against (grader.harness.attention,
grader.harness.norms, grader.harness.answers): a bug here would move the reference and the learner's
kernel together, so end-to-end tests of kernels against it could not see it. Each is checked against
torch's independent implementation or a number worked out by hand."""

import pytest
import torch
import torch.nn.functional as F

from grader.errors import CheckFailed, NotImplementedYet
from grader.harness import answers, attention, norms


def _qkv(b=2, h=3, n=37, d=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, d, generator=gen, dtype=torch.float64) for _ in range(3)]

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk_bytes", [1, 37 * 8 * 6 * 5, 64 << 20])   # one row a block, 5 rows, all at once
def test_the_attention_reference_is_torchs_at_every_block_size(causal, chunk_bytes):
    q, k, v = _qkv()
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(attention.attention_reference(q, k, v, causal, chunk_bytes), want)


def test_the_blocks_of_scores_cover_every_row_once():
    q, k, _ = _qkv(n=10)
    spans = [(i0, i1) for i0, i1, _ in attention.scores_by_blocks(q, k, chunk_bytes=3 * 8 * 6 * 10)]
    assert spans == [(0, 3), (3, 6), (6, 9), (9, 10)]


def test_attention_flops_count_the_unmasked_scores():
    assert attention.attention_flops((1, 1, 4, 8)) == 4 * 16 * 8
    assert attention.attention_flops((1, 1, 4, 8), causal=True) == 4 * 10 * 8      # 1 + 2 + 3 + 4 scores
    assert attention.attention_flops((2, 3, 4, 8), causal=True) == 6 * 4 * 10 * 8


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_rms_norm_is_torchs_and_keeps_the_dtype(dtype):
    gen = torch.Generator().manual_seed(1)
    x, residual = (torch.randn(5, 64, generator=gen).to(dtype) for _ in range(2))
    weight = (1 + 0.1 * torch.randn(64, generator=gen)).to(dtype)
    normed, r = norms.add_rms_norm(x, residual, weight)
    assert normed.dtype == dtype and torch.equal(r, x + residual)
    want = F.rms_norm(r.double(), (64,), weight.double(), eps=norms.RMS_EPS).to(dtype)
    torch.testing.assert_close(normed, want)


def test_rms_norm_of_a_zero_row_is_zero_not_nan():
    assert torch.equal(norms.rms_norm(torch.zeros(1, 8), torch.ones(8)), torch.zeros(1, 8))


def test_a_right_flop_count_passes_and_a_wrong_one_names_the_call():
    answers.check_gemm_flops(lambda m, n, k: 2 * m * n * k, exercise="3", names="`gemm_flops`")
    with pytest.raises(CheckFailed, match=r"gemm_flops\(1, 1, 1\) .* = 1, expected 2"):
        answers.check_gemm_flops(lambda m, n, k: m * n * k, exercise="3", names="`gemm_flops`")


def test_a_stub_answer_is_not_written_yet_naming_the_exercise():
    def gemm_flops(m, n, k):
        raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="exercise 3 is not written yet: write `gemm_flops`"):
        answers.check_gemm_flops(gemm_flops, exercise="3", names="`gemm_flops`")


@pytest.mark.parametrize("got, says", [(True, "should return a number, got bool"), ("2", "got str"),
                                       (None, "got NoneType"), (2.1, "= 2.1, expected 2")])
def test_only_a_close_plain_number_is_an_answer(got, says):
    with pytest.raises(CheckFailed, match=says):
        answers.require_close(got, 2, "f(1)")


def test_a_floor_in_milliseconds_passes_and_one_in_seconds_fails():
    answers.check_floor_ms(lambda flops, tflops: flops / (tflops * 1e12) * 1e3, exercise="4")
    with pytest.raises(CheckFailed, match="milliseconds"):
        answers.check_floor_ms(lambda flops, tflops: flops / (tflops * 1e12), exercise="4")
