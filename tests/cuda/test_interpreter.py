"""Triton's interpreter as the course runs it (grader/cuda/interpreter.py): its casts to fp8 and bf16 round as
the GPU's instructions do, and its tl.dot calls are counted by operand type. The GPU's side of the claim,
the instructions Triton emits for the casts, is read from Triton's own PTX for sm_89 and sm_90."""

import collections
import re

import pytest
import torch

from conftest import run_script
from grader.cuda import archs, crosscompile

CASTS = r"""
import json
import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter as triton_interpreter

original = triton_interpreter._convert_float
from grader.cuda import interpreter
from grader.cuda.tally import Tally
interpreter.prepare()


@triton.jit
def cast(x_ptr, y_ptr, n, BLOCK: tl.constexpr, KIND: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    if KIND == 0:
        tl.store(y_ptr + offs, x.to(tl.float8e4nv), mask=inside)
    elif KIND == 1:
        tl.store(y_ptr + offs, x.to(tl.float8e5), mask=inside)
    else:
        tl.store(y_ptr + offs, x.to(tl.bfloat16), mask=inside)


@triton.jit
def dot(a_ptr, b_ptr, c_ptr, WIDEN: tl.constexpr):
    r = tl.arange(0, 32)
    k = tl.arange(0, 64)
    a = tl.load(a_ptr + r[:, None] * 64 + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 32 + r[None, :])
    if WIDEN:
        a, b = a.to(tl.float16), b.to(tl.float16)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], tl.dot(a, b))


def run(x, dtype, kind):
    y = torch.empty(x.numel(), dtype=dtype)
    cast[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()), KIND=kind)
    return y


codes = torch.arange(0, 126, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
mids = (codes[:-1] + codes[1:]) / 2
x = torch.cat([codes, mids, mids * (1 + 2**-20), mids * (1 - 2**-20),
               torch.tensor([449., 464., 470., 480., 1000., 1e6, float("inf"), float("nan"), 2**-10, 3 * 2**-11])])
x = torch.cat([x, -x])
want = x.clamp(-448, 448).to(torch.float8_e4m3fn)
got = run(x, torch.float8_e4m3fn, 0)
def same(a, b):   # bit for bit, except a NaN's sign, which means nothing (-NaN in, either NaN out)
    def bits(t):
        u = t.view(torch.uint8)
        return torch.where((u & 0x7F) == 0x7F, 0x7F, u) if t.dtype == torch.float8_e4m3fn else u
    return bool(torch.equal(bits(a), bits(b)))
out = {"e4m3": same(got, want), "e4m3_half": same(run(x.half(), torch.float8_e4m3fn, 0),
                                                   x.half().float().clamp(-448, 448).to(torch.float8_e4m3fn))}
e5 = torch.cat([x * 64, torch.tensor([57344., 61440., 1e9, float("inf")])])
out["e5m2"] = same(run(e5, torch.float8_e5m2, 1), e5.clamp(-57344, 57344).to(torch.float8_e5m2))
wide = torch.randn(4096) * 1000
out["bf16"] = bool(torch.equal(run(wide, torch.bfloat16, 2).view(torch.int16), wide.bfloat16().view(torch.int16)))
every = torch.arange(0, 256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn)
up = torch.empty(256)
@triton.jit
def widen(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))
widen[(1,)](every, up, BLOCK=256)
ref = every.float()
out["widen"] = bool(((up == ref) | (up.isnan() & ref.isnan())).all())
probe = np.array([0.0029296875, 0.0302734375], dtype=np.float32)
out["original_tie"] = list(np.asarray(original(probe, tl.float32, tl.float8e4nv, None)).view(np.uint8).tolist())
out["patched_is_exact"] = interpreter._conversion_is_exact(triton_interpreter._convert_float)

a = (torch.randn(32, 64) * 8).to(torch.float8_e4m3fn)
b = (torch.randn(64, 32) * 8).to(torch.float8_e4m3fn)
c = torch.empty(32, 32)
for widen_first in (False, True):
    tally = Tally()
    with interpreter.counting(tally, "dot"):
        dot[(1,)](a, b, c, WIDEN=widen_first)
    out[f"count_{widen_first}"] = [tally.total, tally.fp8_total]
out["product"] = bool(torch.allclose(c.double(), a.double() @ b.double(), rtol=1e-6, atol=1e-3))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted():
    return run_script(CASTS)


def test_the_interpreters_own_fp8_rounding_is_the_one_the_patch_replaces(interpreted):
    # Triton 3.9: the tie 1.5 x 2^-9 rounds away from zero (0x03, not 0x02), and 0.0302734375 loses its carry.
    assert interpreted["original_tie"] != [0x02, 0x10]
    assert interpreted["patched_is_exact"]


def test_fp8_casts_round_to_nearest_even_and_saturate_as_the_gpu_does(interpreted):
    assert interpreted["e4m3"] and interpreted["e4m3_half"] and interpreted["e5m2"]
    assert interpreted["widen"]


def test_fp32_to_bf16_rounds_to_nearest_even(interpreted):
    assert interpreted["bf16"]


def test_tl_dot_is_counted_by_operand_type(interpreted):
    assert interpreted["count_False"] == [32 * 32 * 64, 32 * 32 * 64]
    assert interpreted["count_True"] == [32 * 32 * 64, 0]   # converted to fp16 first: no fp8 multiply-adds
    assert interpreted["product"]


@pytest.mark.parametrize("arch", ["sm_89", "sm_90"])
def test_the_gpu_casts_are_the_saturating_round_to_nearest_instructions(arch):
    """What the patch reproduces, read from Triton's PTX: `cvt.rn.satfinite` for fp32 and fp16 to e4m3."""
    import triton
    import triton.language as tl

    with crosscompile.quiet_triton():
        @triton.jit
        def ladder_cast_probe(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(tl.float8e4nv), mask=offs < n)

    ops = collections.Counter()
    for dtype in (torch.float32, torch.float16):
        x = torch.empty(256, device="meta", dtype=dtype)
        y = torch.empty(256, device="meta", dtype=torch.float8_e4m3fn)
        (launch,) = crosscompile.record(lambda: ladder_cast_probe[(1,)](x, y, 256, BLOCK=256))
        (built,) = crosscompile.build(launch, archs.by_name(arch))
        ops.update(re.findall(r"cvt\.[\w.]*e4m3[\w.]*", built.ptx))
    assert set(ops) == {"cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e4m3x2.f16x2"}, ops


def test_each_types_numpy_type_is_the_interpreters_own():
    """The type lookup `prepare()` installs (found once per scalar type) answers as Triton's own does, for scalars,
    blocks, pointers and blocks of pointers, the second time from what it found the first, and refuses what
    Triton's refuses."""
    import triton.language as tl
    from triton.runtime import interpreter as triton_interpreter

    from grader.cuda import interpreter

    interpreter.prepare()
    installed = triton_interpreter._get_np_dtype
    assert installed._ladder_looked_up
    own = installed.__wrapped__
    looked_up = interpreter._looked_up(own)
    scalars = [tl.int1, tl.int8, tl.uint8, tl.int16, tl.int32, tl.int64, tl.uint64, tl.float16, tl.bfloat16,
               tl.float32, tl.float64, tl.float8e4nv, tl.float8e5]
    types = scalars + [tl.block_type(t, [4, 8]) for t in scalars] + [tl.pointer_type(tl.float16),
                                                                     tl.block_type(tl.pointer_type(tl.int32), [16])]
    for t in types * 2:
        assert looked_up(t) == own(t), t
    with pytest.raises(KeyError):
        looked_up(tl.void)
