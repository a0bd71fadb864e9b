"""Attention as the course defines it, for every chapter that checks or counts it: the exact float64
reference (chapter 6's graded kernel, chapter 8's block) and its FLOP count."""

from __future__ import annotations

import math

import torch


def scores_by_blocks(q, k, causal=False, chunk_bytes=64 << 20):
    """(i0, i1, scores of query rows i0..i1 against every key, masked if causal), a block of rows at a
    time so that one block's scores stay near chunk_bytes: at N = 16384 all of them would not fit."""
    b, h, n, d = q.shape
    rows = max(1, chunk_bytes // (q.element_size() * b * h * n))
    keys = torch.arange(n, device=q.device)
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        s = (q[:, :, i0:i1] @ k.transpose(-2, -1)) / math.sqrt(d)
        if causal:
            s.masked_fill_(keys[None, :] > torch.arange(i0, i1, device=q.device)[:, None], float("-inf"))
        yield i0, i1, s


def attention_reference(q, k, v, causal=False, chunk_bytes=64 << 20):
    """Exact attention in the inputs' precision (float64 here), a block of query rows at a time."""
    out = torch.empty_like(q)
    for i0, i1, s in scores_by_blocks(q, k, causal, chunk_bytes):
        out[:, :, i0:i1] = torch.softmax(s, dim=-1) @ v
    return out


def attention_flops(size, causal: bool = False) -> int:
    """Two matmuls (Q K^T and P V), 2 FLOPs per multiply-add; causal counts the unmasked scores only."""
    b, h, n, d = size
    scores = n * (n + 1) // 2 if causal else n * n
    return 4 * b * h * scores * d
