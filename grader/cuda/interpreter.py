"""Triton's CPU interpreter, made to agree with the GPU where the course's checks need it to, and counted.

Three things, installed once per process by `prepare()` wherever the interpreter runs learner kernels
(a notebook's `start()` without a GPU, the grader's worker, the test suite):

- **fp8 and bf16 casts.** Triton 3.9's interpreter converts to and from fp8 with bit arithmetic of its own
  (`triton.runtime.interpreter._convert_float`) that rounds ties away from zero instead of to even, drops
  the carry when rounding fills the mantissa (0.0302734375 becomes 0.015625 instead of 0.03125), rounds
  subnormal results twice, and neither saturates nor keeps NaN. On the GPU, `x.to(tl.float8e4nv)` compiles
  to `cvt.rn.satfinite.e4m3x2.f32` on sm_89 and sm_90 (Triton 3.9's PTX, checked by
  tests/cuda/test_interpreter.py): round to nearest even, values past the largest finite one saturate to it,
  NaN stays NaN. Chapter 9 checks quantized codes bit for bit, so the interpreter must round as the GPU
  does. Torch's casts round to nearest even (torch/headeronly/util/Float8_e4m3fn.h), and a clamp to the
  format's finite range before them gives the saturation, whatever torch's own overflow rule is (it
  changed in 2.12). Triton's fix is pending upstream (triton-lang/triton pull request 11897); `prepare()`
  leaves the conversion alone when a probe finds it already right. The same arithmetic truncates fp32 to
  bf16 (it is given no rounding mode), where the GPU rounds to nearest even (`cvt.rn.bf16.f32`): chapter 9's
  GEMM writes bf16 within a tolerance of half a step, so that cast is made exact too.
- **multiply-adds by operand type.** `counting(tally)` adds the multiply-adds of every `tl.dot` the
  interpreter runs to a grader.cuda.tally.Tally, under the kernel's name, and those whose operands are
  both fp8 again under `fp8_macs`: without a GPU, what grader.cuda.tccount counts on one (which kernel's
  products ran on which tensor-core instructions), so that chapter 9's requirement of FP8 tensor-core work
  is judged the same way on a CPU. A kernel that converts its fp8 tiles to fp16 before `tl.dot` does its
  multiply-adds in fp16 in both counts.
- **one type lookup a type** (`_looked_up`): the interpreter's NumPy type for each Triton type, kept once found,
  which makes kernels with many small block operations up to a third faster on the CPU, answers unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import os

from .tally import Tally

# The tally a counted launch adds to, and the name of the kernel running (set by `launch_counted`).
_COUNTING: contextvars.ContextVar[tuple[Tally, str] | None] = contextvars.ContextVar("ladder_interp_count",
                                                                                     default=None)
_INSTALLED: dict[str, bool] = {}


def interpreting() -> bool:
    """Whether Triton kernels defined now run in the interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def prepare() -> None:
    """Install both patches into Triton's interpreter, once per process. Imports Triton: call it only
    where the interpreter runs (`start()` has already set TRITON_INTERPRET)."""
    if _INSTALLED.get("done"):
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    _INSTALLED["done"] = True
    if not _conversion_is_exact(interpreter._convert_float):
        interpreter._convert_float = _exact_fp8(interpreter._convert_float)
    builder = interpreter.InterpreterBuilder
    if not getattr(builder.create_dot, "_ladder_counted", False):
        builder.create_dot = _counted_dot(builder.create_dot)
    if not getattr(interpreter._get_np_dtype, "_ladder_looked_up", False):
        interpreter._get_np_dtype = _looked_up(interpreter._get_np_dtype)


# ------------------------------------------------------------------------------------ fp8 casts

def _formats():
    import torch
    import triton.language as tl

    fp8 = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}
    wide = {tl.float16: torch.float16, tl.bfloat16: torch.bfloat16, tl.float32: torch.float32}
    return fp8, wide


def _as_torch(data, dtype):
    """A NumPy array as the interpreter stores it (bf16 and fp8 as unsigned integers) viewed as torch `dtype`."""
    import numpy as np
    import torch

    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[torch.empty(0, dtype=dtype).element_size()]
    return torch.from_numpy(np.ascontiguousarray(data).view(bits).astype(bits, copy=True)).view(
        {np.uint8: torch.uint8, np.uint16: torch.int16, np.uint32: torch.int32}[bits]).view(dtype)


def _to_numpy(t):
    import torch

    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
    out = t.contiguous().view(bits).numpy()
    import numpy as np
    return out.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[t.element_size()])


def _exact_fp8(original):
    """`_convert_float` with every conversion between fp8 (e4m3fn, e5m2) and fp16, bf16 or fp32 done by torch,
    rounding to nearest even and saturating as `cvt.rn.satfinite` does; other conversions, and downcasts
    asked to round toward zero, go to the original."""
    from triton._C.libtriton import ir

    def convert(input, input_dtype, output_dtype, rounding_mode):
        import torch
        import triton.language as tl

        fp8, wide = _formats()
        if input_dtype in fp8 and output_dtype in wide:
            value = _as_torch(input, fp8[input_dtype]).to(torch.float32).to(wide[output_dtype])
            return _to_numpy(value).reshape(input.shape)
        if input_dtype in wide and output_dtype in fp8 and rounding_mode in (None, ir.ROUNDING_MODE.RTNE):
            target = fp8[output_dtype]
            largest = torch.finfo(target).max
            value = _as_torch(input, wide[input_dtype]).to(torch.float32)
            value = value.clamp(-largest, largest)   # NaN stays NaN; infinities saturate, as satfinite does
            return _to_numpy(value.to(target)).reshape(input.shape)
        if input_dtype == tl.float32 and output_dtype == tl.bfloat16 and rounding_mode in (None, ir.ROUNDING_MODE.RTNE):
            # The interpreter truncates here (it passes no rounding mode); the GPU rounds to nearest even
            # (cvt.rn.bf16.f32), and so does torch.
            return _to_numpy(_as_torch(input, torch.float32).to(torch.bfloat16)).reshape(input.shape)
        return original(input, input_dtype, output_dtype, rounding_mode)

    convert._ladder_exact = True
    return convert


def _conversion_is_exact(convert) -> bool:
    """Whether the interpreter's conversion already rounds ties to even and carries into the exponent: two
    fp32 values that Triton 3.9's own conversion gets wrong (a tie, and a carry)."""
    if getattr(convert, "_ladder_exact", False):
        return True
    import numpy as np
    import triton.language as tl

    probe = np.array([0.0029296875, 0.0302734375], dtype=np.float32)   # tie 1.5 * 2^-9; rounds up to 2^-5
    try:
        got = convert(probe, tl.float32, tl.float8e4nv, None)
    except Exception:  # noqa: BLE001 - a conversion that cannot even run this is not exact
        return False
    return list(np.asarray(got).view(np.uint8)) == [0x02, 0x10]


# ------------------------------------------------------------------------------ counting tl.dot

def _counted_dot(original):
    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        counting = _COUNTING.get()
        if counting is not None:
            tally, name = counting
            shape_a, shape_b = a.data.shape, b.data.shape
            batch = 1
            for extent in shape_a[:-2]:
                batch *= int(extent)
            macs = batch * int(shape_a[-2]) * int(shape_a[-1]) * int(shape_b[-1])
            tally.add(name, macs)
            if _is_fp8(a.dtype) and _is_fp8(b.dtype):
                tally.add_fp8(name, macs)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot._ladder_counted = True
    return create_dot


def _looked_up(original):
    """Triton's NumPy type for a Triton type, found once per scalar type. Why: Triton 3.9's interpreter builds its
    table of 19 NumPy types at every call, and calls it for every value a block operation makes; in a kernel whose
    reduction combines elements with a function of the learner's (chapter 9's quantize) that was a fifth of its time
    on the CPU. Pointers, blocks and the answers are the original's: a block's type is its element's, and a pointer
    (or a block of them) holds addresses, which the original answers itself."""
    import triton.language as tl

    found: dict = {}

    def np_dtype(tt_dtype):
        scalar = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        if isinstance(scalar, tl.pointer_type):
            return original(tt_dtype)
        try:
            return found[scalar]
        except KeyError:
            found[scalar] = original(scalar)
            return found[scalar]

    np_dtype._ladder_looked_up = True
    np_dtype.__wrapped__ = original
    return np_dtype


def _is_fp8(dtype) -> bool:
    scalar = getattr(dtype, "scalar", dtype)
    return bool(getattr(scalar, "is_fp8", lambda: False)())


def is_interpreted(kernel) -> bool:
    """Whether a launched Triton kernel is the interpreter's function (not a compiled JITFunction)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    return isinstance(kernel, InterpretedFunction)


def launch_counted(launch, tally: Tally):
    """Run an interpreted launch with its `tl.dot` multiply-adds added to `tally` under its name."""
    prepare()
    token = _COUNTING.set((tally, launch.name))
    try:
        return launch.proceed()
    finally:
        _COUNTING.reset(token)


@contextlib.contextmanager
def counting(tally: Tally, name: str):
    """Inside, every `tl.dot` the interpreter runs adds to `tally` under `name` (tests and tools)."""
    prepare()
    token = _COUNTING.set((tally, name))
    try:
        yield tally
    finally:
        _COUNTING.reset(token)
