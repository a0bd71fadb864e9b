"""The exploit suite: one synthetic submission per cheat or bug the grader must reject.

Each module here is a student in the format of the chapter folders beside it (`CHAPTER_DIR`, `CELLS`
keyed by the grade_id of a solution cell; cells not named keep the instructor's solution), plus

    EXPECT = {"cell": grade_id of the test cell that must reject it,
              "reason": the reason code that cell must fail with (grader.errors, LadderError.reason),
              "device": "cpu" if the verdict is reached without a GPU too, "gpu" if only on one}

and optionally `"sanitize": "racecheck"` (or "memcheck", "synccheck") for a fault only
compute-sanitizer sees, and `"message": "..."`, words the rejection must contain on both paths (the
foreign kernel's library, the named cause). README.md in this folder tabulates them.

Submissions that change a solution cell do it with `edited(solution_cell(...), (old, new), ...)`, so
that they follow the solution when it is edited and fail loudly when a change no longer applies.
"""

from __future__ import annotations

import json
import pkgutil
from pathlib import Path

from submissions.build import ROOT

REASONS = {
    "not-written", "no-gpu", "compile-error", "launch-error", "raised", "crashed", "timed-out", "wrong-result",
    "wrong-dtype", "not-plain", "input-modified", "out-of-bounds", "kernel-unused", "library-compute",
    "swallowed-error", "stray-thread", "stray-process", "tampered", "timer-mismatch", "too-fast", "l2-persist",
    "no-tensor-cores", "no-fp8-tensor-cores",
    "not-fused", "below-bar", "memory", "stderr", "sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-synccheck",
}


def names() -> list[str]:
    """Every submission in this folder, by module name (helpers start with an underscore)."""
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))


def notebook_cell(chapter_dir: str, grade_id: str) -> str:
    """The source of any cell of a chapter's solution notebook, with nbgrader's solution markers (the
    `### BEGIN SOLUTION` and `### END SOLUTION` lines, in Python or in C comments) left out."""
    path = next((ROOT / "solutions" / chapter_dir).glob("*.ipynb"))
    for cell in json.loads(path.read_text())["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            source = "".join(cell["source"])
            return "".join(line for line in source.splitlines(True)
                           if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
    raise KeyError(f"{chapter_dir} has no cell with grade_id {grade_id!r}")


def edited(source: str, *changes: tuple[str, str], count: int = 1) -> str:
    """`source` with each (old, new) replaced; every `old` must occur exactly `count` times."""
    for old, new in changes:
        found = source.count(old)
        if found != count:
            raise ValueError(f"expected {count} occurrence(s) of {old!r} in the solution, found {found}: "
                             "update this submission")
        source = source.replace(old, new)
    return source


# ------------------------------------------------------------------ copy kernels several students share

# A Triton kernel that copies n elements: students who get an answer elsewhere and write it into `out`
# with a kernel of their own, so that `out` is written by a learner's kernel.
TRITON_COPY_KERNEL = '''

@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)
'''

# The same in CUDA C, as a cell defines it: `copy_kernel(grid, block, (src, dst, np.int64(n)))`.
CUDA_COPY_KERNEL = '''
COPY_SRC = r"""
extern "C" __global__ void copy_out(const float* src, float* dst, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""
copy_kernel = load_kernel(COPY_SRC, "copy_out", where="COPY_SRC")
'''


# ------------------------------------------------------------------ the timing cheats' shared piece

# What a learner who has read the grader's source adds to find out whether a call is timed: the frame of the
# grader's timed batch (grader.calls.facts.run_batch) on the stack, or None. Its locals hold `reps`.
FIND_TIMED_BATCH = """
import sys


def _timed_batch():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "run_batch":
            return frame
        frame = frame.f_back
    return None
"""


# ------------------------------------------------------------------ chapter 5 pieces several students share

CH05 = "05_triton_matmul"

# The solution's launch of its autotuned kernel, as written in `matmul-solution`.
CH05_LAUNCH = """    matmul_kernel[grid](a, b, out, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
"""


def ch05_naive_matmul_cell(extra: str) -> str:
    """`matmul-solution` written as the worked naive kernel (32 x 32 tiles, row-major order, no tuning:
    correct, and below 5a's speed bar on every GPU, see submissions/ch05/naive_5a.py), followed by
    `extra`, which defines `matmul`. The configurations stay: 5b's solution uses TUNED_CONFIGS. The
    worker runs only the setup cell and the solution cells, so the naive kernel is copied here rather
    than taken from the notebook's (ungraded) `naive-kernel` cell."""
    given = notebook_cell(CH05, "matmul-solution")
    return given[:given.index("@triton.autotune")] + notebook_cell(CH05, "naive-kernel") + "\n\n" + extra


# ------------------------------------------------------------------ chapter 9 pieces several students share

CH09 = "09_low_precision"

# The solution's launch of its GEMM kernel, as written in `gemm-solution`.
CH09_GEMM_LAUNCH = "    fp8_gemm_kernel[grid](a, a_scale, b, b_scale, out, M, N, K)\n"


def ch09_gemm_behind(computed: str) -> str:
    """`gemm-solution` whose launcher computes the product with torch (`computed`, an expression of a, a_scale, b,
    b_scale that gives the (M, N) product) and writes it into `out` with a Triton copy kernel of its own, so that
    a learner's kernel does write every element of `out`."""
    given = notebook_cell(CH09, "gemm-solution")
    return given[:given.index("\ndef fp8_gemm(")] + TRITON_COPY_KERNEL + f'''


def fp8_gemm(a, a_scale, b, b_scale, out):
    product = ({computed}).to(out.dtype)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](product, out, n, BLOCK=1024)
'''


# The result caches of fingerprint_cache (5a) and decode_result_cache (10a): a fingerprint of a tensor (its data
# pointer, its shape and eight values sampled by a Triton kernel of the entry's own), a copy kernel of its own to keep
# a result, and the dict that keeps them. Each entry adds the launcher that looks its inputs up.
FINGERPRINT_CACHE = """

@triton.jit
def sample_kernel(src_ptr, dst_ptr, n, step):
    i = tl.program_id(0)
    tl.store(dst_ptr + i, tl.load(src_ptr + i * step, mask=i * step < n, other=0.0))


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


_results = {}


def _fingerprint(t):
    picks = torch.empty(8, dtype=t.dtype, device=t.device)
    sample_kernel[(8,)](t, picks, t.numel(), max(1, t.numel() // 8))
    return t.data_ptr(), tuple(t.shape), tuple(picks.tolist())
"""
