"""RMSNorm as the course defines it, for every chapter that checks or times it: chapter 7's fused
residual add + RMSNorm and chapter 8's transformer block.

    r = x + residual;   out = r * rsqrt(mean(r^2) + RMS_EPS) * weight

The statistics are computed in fp32 (float64 for the graded reference). `rms_norm` follows Hugging
Face's `LlamaRMSNorm.forward` step for step (transformers, models/llama/modeling_llama.py): upcast,
square, mean, add epsilon, rsqrt, multiply, downcast to the input's dtype, and only then multiply by the
weight, in the input's dtype (`self.weight * hidden_states.to(input_dtype)`). In torch's eager mode each
step is a kernel of its own: that is the baseline both chapters time against.
"""

from __future__ import annotations

import torch

RMS_EPS = 1e-6


def rms_norm(r: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    wide = torch.float64 if r.dtype == torch.float64 else torch.float32
    rw = r.to(wide)
    normed = rw * torch.rsqrt(rw.pow(2).mean(-1, keepdim=True) + RMS_EPS)
    return weight * normed.to(r.dtype)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(normed, r) with r = x + residual: torch eager's residual add, then the norm."""
    r = x + residual
    return rms_norm(r, weight), r
