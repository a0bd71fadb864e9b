"""8b, the block put together another way: the attention half runs on heads laid out by hand. The q, k
and v projections are three launches of `matmul` on column slices of w_qkv (strided views, no copy of
the weight), each straight into a (B*N, C) buffer; each buffer is then copied once into (B, H, N, D) for
`attention`; the heads come back through `torch.empty` + `copy_` into a (B, N, H, D) buffer that is
already (B*N, C) row-major. The norms, the output projection, the MLP and the residual stream are the
chapters' kernels in the block's order, with buffers named by what they hold.

Independent of the solution: three projections instead of one fused QKV matmul and one permuting copy;
the head merge written as a copy into a preallocated buffer; its own buffer layout and names. The kernels
pasted from chapters 5-7 are the solution's (the paste cells are not named here).

Why it should pass: the same FLOPs and the same fused kernels as the solution (1.244-1.270x torch eager
on an H100, bars.toml "8b", 1.1x bar); three (B*N x C) by (C x C) matmuls instead of one of 3C columns
launch more, smaller grids, and the copies move the same bytes. The unfused block, which moves more,
still measured 1.161-1.178x. Not yet measured on a GPU: test_exploits.py -k ch08_8b_split_projections
there says.
"""
CHAPTER_DIR = "08_should_you_write_it"
CELLS = {
    "block-solution": r'''
import torch

from grader.chapters import ch08


def block(x, residual, w_norm1, w_qkv, w_out, w_norm2, w_up, b_up, w_down, out):
    batch, seq, width = x.shape
    head_dim = ch08.HEAD_DIM
    heads = width // head_dim
    tokens = batch * seq

    def buffer(*shape):
        return torch.empty(shape, device=x.device, dtype=x.dtype)

    stream, normed = buffer(tokens, width), buffer(tokens, width)
    add_rmsnorm(x.reshape(tokens, width), residual.reshape(tokens, width), w_norm1, normed, stream)

    per_head = []
    for part in range(3):                          # q, then k, then v
        projected = buffer(tokens, width)
        matmul(normed, w_qkv[:, part * width:(part + 1) * width], projected)
        per_head.append(projected.view(batch, seq, heads, head_dim).transpose(1, 2).contiguous())
    attended = buffer(batch, heads, seq, head_dim)
    attention(per_head[0], per_head[1], per_head[2], attended, False)

    merged = buffer(batch, seq, heads, head_dim)
    merged.copy_(attended.transpose(1, 2))
    projected_back = buffer(tokens, width)
    matmul(merged.view(tokens, width), w_out, projected_back)

    normed_again = buffer(tokens, width)
    add_rmsnorm(projected_back, stream, w_norm2, normed_again, out[1].view(tokens, width))
    widened = buffer(tokens, 4 * width)
    matmul_bias_act(normed_again, w_up, b_up, widened)
    matmul(widened, w_down, out[0].view(tokens, width))
''',
}
EXPECT = {"cells": ["block-visible", "block-hidden", "block-speed"], "device": "cpu"}
