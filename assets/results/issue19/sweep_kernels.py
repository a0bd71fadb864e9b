"""The candidates of the issue-19 sweep (sweep_gpu.py): kernels, fixed-configuration launchers, the
correctness check every candidate passes before it is timed, and the worker processes that compile and
check candidates in parallel.

Kernels are kept as notebook-cell texts, executed the way tests/submissions/build.py runs a solution
cell (registered in linecache, so @triton.jit can read their source), so that a winning variant can be
pasted into its notebook cell as it was measured:

- CH05_CELL: the chapter 5 Hopper rung with every knob the sweep turns, as compile-time constants of one
  kernel (persistent or one program per tile; epilogue in 1, 2 or 4 TMA stores, or a masked pointer
  store; `flatten` and `warp_specialize` on the tile loop). SUBTILES=2 with every other knob off is the
  shipped `hopper-solution` kernel with SPLIT_STORE=True, SUBTILES=1 the one with SPLIT_STORE=False.
- CH06_TMA_CELL: chapter 6's tuned forward with Q, K and V read through tensor descriptors (TMA on
  sm_90; Triton rewrites descriptors into pointer loads before sm_90), optional `warp_specialize` on the
  key loop. Same launcher `attention_fast(q, k, v, out, causal)` and the same learner-visible structure as
  the shipped `stretch-fast-solution` cell, with its ### BEGIN SOLUTION / ### END SOLUTION markers.
- CH06_HOST_CELL: the same with descriptors made on the host (triton.tools.tensor_descriptor), passed as
  kernel arguments: no descriptor is written and fenced by each program. Sweep only (the notebook version
  would need a pre_hook to give the descriptors each configuration's block shape).
- The shipped chapter 6 kernel (pointer loads) is read from the solution notebook itself.

The sweep never uses an autotuner: each candidate is one kernel with one fixed configuration, launched as
`kernel.fn[grid](..., **constexprs, num_warps=, num_stages=)` (the JITFunction under the @autotune of the
cell), so exactly one configuration is compiled, checked and timed.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# --------------------------------------------------------------------------------------------- chapter 5

CH05_CELL = '''
# The Hopper rung with its knobs: the tile, GROUP_M, and (compile-time constants of the kernel)
# SUBTILES: the output tile written in 1, 2 or 4 column strips (each TMA store needs a staging buffer
#   of one strip in shared memory: smaller strips leave room for one more pipeline stage);
# TMA_STORE: False writes the tile from registers with a masked tl.store instead (no staging buffer);
# FLATTEN: tl.range(..., flatten=True) folds the K loop into the tile loop, so the next tile's loads
#   are issued while this tile's epilogue runs;
# WARP_SPEC: tl.range(..., warp_specialize=True): a producer warp issues the TMA loads for the others.
TMA_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "SUBTILES": 2,
                   "TMA_STORE": True, "FLATTEN": False, "WARP_SPEC": False}, num_warps=8, num_stages=4),
]


@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, SUBTILES: tl.constexpr, TMA_STORE: tl.constexpr,
                      FLATTEN: tl.constexpr, WARP_SPEC: tl.constexpr, PERSISTENT: tl.constexpr,
                      NUM_SMS: tl.constexpr):
    ### BEGIN SOLUTION
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    STRIP: tl.constexpr = BLOCK_N // SUBTILES
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, STRIP])
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    k_steps = tl.cdiv(K, BLOCK_K)
    if PERSISTENT:   # one program per SM, walking tiles pid, pid + NUM_SMS, ... of the grouped order
        first, last, step = tl.program_id(0), grid_m * grid_n, NUM_SMS
    else:            # one program per tile
        first, last, step = tl.program_id(0), tl.program_id(0) + 1, 1
    for tile in tl.range(first, last, step, flatten=FLATTEN, warp_specialize=WARP_SPEC):
        first_m = (tile // per_group) * GROUP_M
        rows = min(grid_m - first_m, GROUP_M)
        within = tile % per_group
        row0 = (first_m + within % rows) * BLOCK_M
        col0 = (within // rows) * BLOCK_N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, k_steps):
            a = a_desc.load([row0, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, col0])
            acc = tl.dot(a, b, acc)

        c = acc.to(tl.float16)
        if not TMA_STORE:
            offs_m = row0 + tl.arange(0, BLOCK_M)
            offs_n = col0 + tl.arange(0, BLOCK_N)
            tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], c,
                     mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
        elif SUBTILES == 1:
            c_desc.store([row0, col0], c)
        elif SUBTILES == 2:
            # (BLOCK_M, BLOCK_N) -> (BLOCK_M, 2, BLOCK_N / 2) -> left and right halves
            left, right = tl.split(tl.permute(tl.reshape(c, (BLOCK_M, 2, STRIP)), (0, 2, 1)))
            c_desc.store([row0, col0], left)
            c_desc.store([row0, col0 + STRIP], right)
        else:
            left, right = tl.split(tl.permute(tl.reshape(c, (BLOCK_M, 2, 2 * STRIP)), (0, 2, 1)))
            s0, s1 = tl.split(tl.permute(tl.reshape(left, (BLOCK_M, 2, STRIP)), (0, 2, 1)))
            s2, s3 = tl.split(tl.permute(tl.reshape(right, (BLOCK_M, 2, STRIP)), (0, 2, 1)))
            c_desc.store([row0, col0], s0)
            c_desc.store([row0, col0 + STRIP], s1)
            c_desc.store([row0, col0 + 2 * STRIP], s2)
            c_desc.store([row0, col0 + 3 * STRIP], s3)
    ### END SOLUTION
'''


# --------------------------------------------------------------------------------------------- chapter 6

CH06_TMA_CELL = '''import math  # repeated so that this cell also runs on its own

import torch
import triton
import triton.language as tl

from grader.chapters import ch06

# The configurations the autotuner times on your GPU, once per (N, D, causal) (the sweep's winners go here).
FAST_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2),   # for 64 KiB of shared memory (T4)
]


@triton.jit
def fast_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
              BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """One step of the online softmax, its K and V tiles copied by the TMA unit: rows row0 + start_n ...
    of the (B * H * N, D) stacks of keys and values."""
    ### BEGIN SOLUTION
    k = k_desc.load([row0 + start_n, 0])            # BLOCK_N x D, one bulk copy into shared memory
    v = v_desc.load([row0 + start_n, 0])
    qk = tl.dot(q, tl.trans(k))
    if MASKED:
        # Past N the copy returns the next head's rows (or zeros after the last head): their scores
        # become -inf here, so their weights are 0 and their values add nothing.
        offs_n = start_n + tl.arange(0, BLOCK_N)
        visible = offs_n[None, :] < N
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        qk = tl.where(visible, qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, m_new, l_i
    ### END SOLUTION


@triton.autotune(configs=ch06.fast_configs(FAST_CONFIGS), key=["N", "D", "CAUSAL"])
@triton.jit
def flash_attention_fast_kernel(Q, K, V, O, N, qk_scale, D: tl.constexpr, CAUSAL: tl.constexpr,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The tuned forward with Q, K and V read through tensor descriptors over the (B * H * N, D) stack of
    all heads' rows: on Hopper each tile is one TMA copy, issued ahead and waited on by the pipeline,
    with no address arithmetic in the loop; the output is stored with a mask, as before."""
    ### BEGIN SOLUTION
    num_m = tl.cdiv(N, BLOCK_M)
    if CAUSAL:
        pid_m = num_m - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    start_m = pid_m * BLOCK_M
    rows = tl.num_programs(1) * N                     # every (batch, head)'s rows, one after another
    row0 = tl.program_id(1) * N                       # this head's first row
    q_desc = tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_desc = tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_desc = tl.make_tensor_descriptor(V, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    q = q_desc.load([row0 + start_m, 0])              # rows past N belong to no output: never stored
    offs_m = start_m + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        unmasked_end = start_m // BLOCK_N * BLOCK_N
        end = tl.minimum(start_m + BLOCK_M, N)
    else:
        unmasked_end = N // BLOCK_N * BLOCK_N
        end = N
    for start_n in range(0, unmasked_end, BLOCK_N):
        acc, m_i, l_i = fast_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
                                  BLOCK_N, False, CAUSAL)
    for start_n in range(unmasked_end, end, BLOCK_N):
        acc, m_i, l_i = fast_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
                                  BLOCK_N, True, CAUSAL)
    offs_d = tl.arange(0, D)
    head = tl.program_id(1).to(tl.int64) * N * D
    tl.store(O + head + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=offs_m[:, None] < N)
    ### END SOLUTION


def attention_fast(q, k, v, out, causal):
    """`attention` of exercise 6, tuned, with TMA loads: the same arguments and result."""
    ### BEGIN SOLUTION
    B, H, N, D = q.shape
    # Descriptors made inside a kernel live in a small global buffer, which Triton asks for through
    # this allocator at every launch (as in chapter 5's Hopper rung).
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=q.device))
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_M"]), B * H)  # noqa: E731
    flash_attention_fast_kernel[grid](q, k, v, out, N, math.log2(math.e) / math.sqrt(D), D=D, CAUSAL=causal)
    ### END SOLUTION
'''

CH06_HOST_CELL = '''import math

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def host_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
              BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    k = k_desc.load([row0 + start_n, 0])
    v = v_desc.load([row0 + start_n, 0])
    qk = tl.dot(q, tl.trans(k))
    if MASKED:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        visible = offs_n[None, :] < N
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        qk = tl.where(visible, qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, m_new, l_i


@triton.jit
def flash_attention_host_kernel(q_desc, k_desc, v_desc, O, N, qk_scale, D: tl.constexpr, CAUSAL: tl.constexpr,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    num_m = tl.cdiv(N, BLOCK_M)
    if CAUSAL:
        pid_m = num_m - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    start_m = pid_m * BLOCK_M
    row0 = tl.program_id(1) * N
    q = q_desc.load([row0 + start_m, 0])
    offs_m = start_m + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        unmasked_end = start_m // BLOCK_N * BLOCK_N
        end = tl.minimum(start_m + BLOCK_M, N)
    else:
        unmasked_end = N // BLOCK_N * BLOCK_N
        end = N
    for start_n in range(0, unmasked_end, BLOCK_N):
        acc, m_i, l_i = host_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
                                  BLOCK_N, False, CAUSAL)
    for start_n in range(unmasked_end, end, BLOCK_N):
        acc, m_i, l_i = host_tile(acc, m_i, l_i, q, k_desc, v_desc, row0, start_n, offs_m, N, qk_scale,
                                  BLOCK_N, True, CAUSAL)
    offs_d = tl.arange(0, D)
    head = tl.program_id(1).to(tl.int64) * N * D
    tl.store(O + head + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=offs_m[:, None] < N)
'''


CH06_WS_CELL = '''import math

import torch
import triton
import triton.language as tl

from grader.chapters import ch06

# The configurations the autotuner times on your GPU, once per (N, D, causal). WARP_SPEC: Triton's
# automatic warp specialisation of the key loop (on Hopper, with num_warps=4: one warp group issues the
# TMA copies, two compute, 64 query rows each; Triton 3.6 compiles it only for a kernel with one key loop).
FAST_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "WARP_SPEC": True}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "WARP_SPEC": True}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "WARP_SPEC": False}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "WARP_SPEC": False}, num_warps=4, num_stages=2),   # 64 KiB (T4)
]


@triton.autotune(configs=ch06.fast_configs(FAST_CONFIGS), key=["N", "D", "CAUSAL"])
@triton.jit
def flash_attention_fast_kernel(Q, K, V, O, N, qk_scale, D: tl.constexpr, CAUSAL: tl.constexpr,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, WARP_SPEC: tl.constexpr):
    """The tuned forward with TMA loads and a single key loop, every tile masked (a compare and a select
    per score), so that the loop can be warp-specialised: one warp group copies K and V tiles ahead while
    the others compute."""
    ### BEGIN SOLUTION
    num_m = tl.cdiv(N, BLOCK_M)
    if CAUSAL:
        pid_m = num_m - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    start_m = pid_m * BLOCK_M
    rows = tl.num_programs(1) * N
    row0 = tl.program_id(1) * N
    q_desc = tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_desc = tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_desc = tl.make_tensor_descriptor(V, shape=[rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    q = q_desc.load([row0 + start_m, 0])
    offs_m = start_m + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        end = tl.minimum(start_m + BLOCK_M, N)
    else:
        end = N
    for start_n in tl.range(0, end, BLOCK_N, warp_specialize=WARP_SPEC):
        k = k_desc.load([row0 + start_n, 0])
        v = v_desc.load([row0 + start_n, 0])
        qk = tl.dot(q, tl.trans(k))
        offs_n = start_n + tl.arange(0, BLOCK_N)
        visible = offs_n[None, :] < N
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        qk = tl.where(visible, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    offs_d = tl.arange(0, D)
    head = tl.program_id(1).to(tl.int64) * N * D
    tl.store(O + head + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=offs_m[:, None] < N)
    ### END SOLUTION


def attention_fast(q, k, v, out, causal):
    """`attention` of exercise 6, tuned, with TMA loads and a warp-specialised key loop."""
    ### BEGIN SOLUTION
    B, H, N, D = q.shape
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=q.device))
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_M"]), B * H)  # noqa: E731
    flash_attention_fast_kernel[grid](q, k, v, out, N, math.log2(math.e) / math.sqrt(D), D=D, CAUSAL=causal)
    ### END SOLUTION
'''


def run_cell(source: str, ns: dict, filename: str) -> dict:
    """Execute a cell's source in `ns` under `filename`, registered in linecache as IPython does (so that
    @triton.jit reads the source), as tests/submissions/build.py does."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    return ns


_NAMESPACES: dict[str, dict] = {}


def namespace(name: str) -> dict:
    """The namespace of one of the cells, executed once per process."""
    if name in _NAMESPACES:
        return _NAMESPACES[name]
    import torch
    import triton
    import triton.language as tl

    ns: dict = {"__name__": f"sweep_{name}", "torch": torch, "triton": triton, "tl": tl, "math": math}
    if name == "ch05":
        from grader.chapters import ch05
        ns["ch05"] = ch05
        run_cell(CH05_CELL, ns, "<sweep ch05 knobs>")
    elif name == "ch06_tma":
        run_cell(CH06_TMA_CELL, ns, "<sweep ch06 tma>")
    elif name == "ch06_ws":
        run_cell(CH06_WS_CELL, ns, "<sweep ch06 tma ws>")
    elif name == "ch06_host":
        run_cell(CH06_HOST_CELL, ns, "<sweep ch06 host descriptors>")
    elif name == "ch06_ptr":   # the shipped stretch-fast-solution cell, as the notebook has it
        sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "tests")) if p not in sys.path]
        from submissions.build import _solution_sources
        run_cell(_solution_sources("06_flash_attention")["stretch-fast-solution"], ns, "<sweep ch06 shipped>")
    else:
        raise KeyError(name)
    _NAMESPACES[name] = ns
    return ns


def jit_of(kernel):
    """The JITFunction under an @autotune (or the kernel itself)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


def set_allocator(device) -> None:
    import torch
    import triton

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))


# --------------------------------------------------------------------------------------------- candidates

@dataclass(frozen=True)
class Candidate:
    """One kernel with one fixed configuration. chapter "ch05" (one candidate covers both timing sizes) or
    "ch06" (one candidate per case: D and causal are compile-time constants)."""
    chapter: str
    variant: str                 # ch05: "persistent", "data-parallel"; ch06: "ptr", "tma", "tma-host", "tma-ws"
    consts: tuple                # (name, value) pairs: the kernel's constexprs of the configuration
    num_warps: int
    num_stages: int
    case: tuple = ()             # ch06: (D, causal)
    priority: int = 0
    note: str = ""

    @property
    def kw(self) -> dict:
        return dict(self.consts)

    @property
    def name(self) -> str:
        c = self.kw
        if self.chapter == "ch05":
            bits = [f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']}", f"G{c['GROUP_M']}",
                    f"w{self.num_warps}", f"s{self.num_stages}",
                    f"sub{c['SUBTILES']}" if c["TMA_STORE"] else "ptr-store"]
            bits += [b for b, on in (("flatten", c["FLATTEN"]), ("ws", c["WARP_SPEC"])) if on]
            return f"{self.variant} " + " ".join(bits)
        ws = " ws" if c.get("WARP_SPEC") else ""
        return f"{self.variant}{ws} {c['BLOCK_M']}x{c['BLOCK_N']} w{self.num_warps} s{self.num_stages}"

    @property
    def case_name(self) -> str:
        if self.chapter == "ch05":
            return "ch05"
        d, causal = self.case
        return f"ch06 D={d} {'causal' if causal else 'non-causal'}"

    def key(self) -> str:
        return f"{self.case_name} | {self.name}"

    def notebook_line(self) -> str | None:
        """ch05: the line for the shipped cell's TMA_CONFIGS (its kernel has SPLIT_STORE only), when this
        candidate is the shipped kernel; None when it needs the knob kernel (CH05_CELL)."""
        c = self.kw
        if self.chapter != "ch05" or not (c["PERSISTENT"] and c["TMA_STORE"] and not c["FLATTEN"]
                                          and not c["WARP_SPEC"] and c["SUBTILES"] in (1, 2)):
            return None
        return (f'triton.Config({{"BLOCK_M": {c["BLOCK_M"]}, "BLOCK_N": {c["BLOCK_N"]}, "BLOCK_K": {c["BLOCK_K"]}, '
                f'"GROUP_M": {c["GROUP_M"]}, "SPLIT_STORE": {c["SUBTILES"] == 2}}}, num_warps={self.num_warps}, '
                f'num_stages={self.num_stages})')

    def config_line(self) -> str:
        """The triton.Config(...) line the notebook's configuration list would carry."""
        kw = {k: v for k, v in self.kw.items() if k != "PERSISTENT"}
        body = ", ".join(f'"{k}": {v}' for k, v in kw.items())
        return f"triton.Config({{{body}}}, num_warps={self.num_warps}, num_stages={self.num_stages})"

    def shared_bytes(self) -> int:
        """An estimate of the dynamic shared memory: pipeline buffers (+ the store's staging strip)."""
        c = self.kw
        if self.chapter == "ch05":
            stage = (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"]) * 2
            staging = c["BLOCK_M"] * (c["BLOCK_N"] // c["SUBTILES"]) * 2 if c["TMA_STORE"] else 0
            return self.num_stages * stage + staging
        d = self.case[0]
        return 2 * d * (c["BLOCK_M"] + 2 * c["BLOCK_N"] * self.num_stages)

    # ---- launching
    def launcher(self):
        """A plain launcher, `matmul_tma(a, b, out)` or `attention_fast(q, k, v, out, causal)`, running
        exactly this configuration. Its `.warmup(...)` compiles without launching."""
        return make_launcher(self)


H100_SHARED = 232448   # bytes of shared memory a block may ask for on sm_90 (227 KiB)


def make_launcher(cand: Candidate):
    import torch
    import triton

    kw = cand.kw
    opts = {"num_warps": cand.num_warps, "num_stages": cand.num_stages}
    if cand.chapter == "ch05":
        kernel = jit_of(namespace("ch05")["matmul_tma_kernel"])
        persistent = kw["PERSISTENT"]

        def prepare(a, b, out):
            M, K = a.shape
            N = b.shape[1]
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
            tiles = triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"])
            grid = (min(sms, tiles),) if persistent else (tiles,)
            args = (a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0))
            return grid, args, {**kw, "NUM_SMS": sms, **opts}

        def matmul_tma(a, b, out, warmup=False):
            grid, args, kwargs = prepare(a, b, out)
            if warmup:
                return kernel.warmup(*args, grid=grid, **kwargs)
            set_allocator(a.device)
            kernel[grid](*args, **kwargs)

        matmul_tma.prepare = prepare
        matmul_tma.kernel = kernel
        return matmul_tma

    d_case, causal_case = cand.case
    if cand.variant in ("ptr", "tma", "tma-ws"):
        ns = namespace({"ptr": "ch06_ptr", "tma": "ch06_tma", "tma-ws": "ch06_ws"}[cand.variant])
        kernel = jit_of(ns["flash_attention_fast_kernel"])
        consts = dict(kw)

        def prepare(q, k, v, out, causal):
            B, H, N, D = q.shape
            grid = (triton.cdiv(N, kw["BLOCK_M"]), B * H)
            args = (q, k, v, out, N, math.log2(math.e) / math.sqrt(D))
            return grid, args, {"D": D, "CAUSAL": causal, **consts, **opts}
    else:   # tma-host
        ns = namespace("ch06_host")
        kernel = jit_of(ns["flash_attention_host_kernel"])
        TensorDescriptor = ns["TensorDescriptor"]

        def prepare(q, k, v, out, causal):
            B, H, N, D = q.shape
            grid = (triton.cdiv(N, kw["BLOCK_M"]), B * H)
            descs = [TensorDescriptor(t, [B * H * N, D], [D, 1], [kw[blk], D])
                     for t, blk in ((q, "BLOCK_M"), (k, "BLOCK_N"), (v, "BLOCK_N"))]
            args = (*descs, out, N, math.log2(math.e) / math.sqrt(D))
            return grid, args, {"D": D, "CAUSAL": causal, **kw, **opts}

    def attention_fast(q, k, v, out, causal, warmup=False):
        if (q.shape[-1], bool(causal)) != (d_case, causal_case):
            # one candidate is one compiled case; any other D or causal is a harness misuse
            raise ValueError(f"candidate {cand.key()} called with D={q.shape[-1]} causal={causal}")
        grid, args, kwargs = prepare(q, k, v, out, causal)
        if warmup:
            return kernel.warmup(*args, grid=grid, **kwargs)
        set_allocator(q.device)
        kernel[grid](*args, **kwargs)

    attention_fast.prepare = prepare
    attention_fast.kernel = kernel
    return attention_fast


def _c5(variant, bm, bn, bk, g, w, s, sub=2, tma_store=True, flatten=False, ws=False, note=""):
    consts = (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk), ("GROUP_M", g), ("SUBTILES", sub),
              ("TMA_STORE", tma_store), ("FLATTEN", flatten), ("WARP_SPEC", ws),
              ("PERSISTENT", variant == "persistent"))
    return Candidate("ch05", variant, consts, w, s, note=note)


def ch05_candidates() -> list[Candidate]:
    """In priority order: what the measurements so far point at first (a cut run still answers), then
    the grid around it. Shared memory over 227 KiB is left out (it would not launch)."""
    P, DP = "persistent", "data-parallel"
    first = [
        # the shipped configurations (SPLIT_STORE True = SUBTILES 2), for the comparison in the same run
        _c5(P, 128, 256, 64, 8, 8, 4, sub=2, note="shipped"),
        _c5(P, 128, 256, 64, 8, 8, 3, sub=1, note="shipped"),
        # flattened tile loop: 1.089x at 8192^3 in the earlier run (autotuned among the shipped five)
        _c5(P, 128, 256, 64, 8, 8, 4, sub=2, flatten=True),
        _c5(P, 128, 256, 64, 8, 8, 4, sub=4, flatten=True),
        _c5(P, 128, 256, 64, 8, 8, 3, sub=2, flatten=True),
        _c5(P, 128, 256, 64, 8, 8, 4, sub=4),
        _c5(P, 256, 128, 64, 8, 8, 4, sub=2),
        _c5(P, 256, 128, 64, 8, 8, 4, sub=2, flatten=True),
        # one program per tile, 2 programs per SM where they fit (an epilogue overlaps the other's loads)
        _c5(DP, 128, 256, 64, 8, 8, 4, sub=2),
        _c5(DP, 128, 256, 64, 8, 8, 3, sub=1),
        _c5(DP, 128, 128, 64, 8, 4, 3, tma_store=False),
        _c5(DP, 128, 128, 64, 8, 8, 3, tma_store=False),
        _c5(DP, 128, 128, 64, 8, 4, 3, sub=2),
        # warp specialisation on the tile loop: 4 warps (what Triton 3.6 compiles on sm_90), and 8 warps
        _c5(P, 128, 128, 64, 8, 4, 3, sub=1, ws=True),
        _c5(P, 128, 256, 64, 8, 8, 3, sub=1, ws=True),
        _c5(P, 128, 128, 64, 8, 8, 4, sub=1, ws=True),
        _c5(P, 128, 256, 64, 8, 8, 3, sub=1, ws=True, flatten=False, note="ws 8 warps"),
    ]
    grid = []
    for bm, bn in ((128, 256), (256, 128), (128, 128)):
        for bk in (64, 128):
            for w in ((8,) if bm * bn > 128 * 128 else (4, 8)):
                for s in (3, 4, 5):
                    for g in (8, 4, 16):
                        for sub in (2, 4, 1):
                            for flatten in (False, True):
                                grid.append(_c5(P, bm, bn, bk, g, w, s, sub=sub, flatten=flatten))
    for bm, bn, w in ((128, 256, 8), (256, 128, 8), (128, 128, 4), (128, 128, 8)):
        for s in (3, 4, 5):
            for g in (8, 16):
                grid.append(_c5(DP, bm, bn, 64, g, w, s, tma_store=False))
    def sig(c):
        return c.variant, c.consts, c.num_warps, c.num_stages

    head, seen = [], set()
    for c in first:
        if sig(c) not in seen and c.shared_bytes() <= H100_SHARED:
            seen.add(sig(c))
            head.append(c)
    rest = []
    for c in grid:
        if sig(c) not in seen and c.shared_bytes() <= H100_SHARED:
            seen.add(sig(c))
            rest.append(c)

    # the grid: tile 128x256 / 256x128 first, BLOCK_K 64 before 128, GROUP_M 8 first, stages 4 and 3 first
    def score(c):
        k = c.kw
        return ((k["BLOCK_M"] * k["BLOCK_N"] != 128 * 256) * 4 + (k["BLOCK_K"] != 64) * 3 + (k["GROUP_M"] != 8) * 2
                + (c.num_stages == 5) * 2 + (k["SUBTILES"] == 1) + k["FLATTEN"] * 0.5 + (c.variant == DP) * 3)
    rest.sort(key=score)
    return [Candidate(c.chapter, c.variant, c.consts, c.num_warps, c.num_stages, c.case, i, c.note)
            for i, c in enumerate(head + rest)]


def _c6(variant, d, causal, bm, bn, w, s, ws=False, note=""):
    consts = (("BLOCK_M", bm), ("BLOCK_N", bn)) + ((("WARP_SPEC", ws),) if variant == "tma-ws" else ())
    return Candidate("ch06", variant, consts, w, s, case=(d, causal), note=note)


CH06_CASES = ((64, False), (64, True), (128, False), (128, True))


def ch06_candidates() -> list[Candidate]:
    """For each case, in priority order: the autotuner's choices of the shipped kernel in the earlier run
    first, then the TMA variant at the same configurations, then wider grids of both, host descriptors and
    warp specialisation. Configurations whose K/V stages and Q tile overflow 227 KiB are left out."""
    out = []
    base = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 4), (128, 64, 8, 4), (128, 128, 8, 2),
            (64, 64, 4, 4), (128, 32, 4, 4), (128, 64, 8, 2), (64, 128, 4, 3), (128, 64, 4, 3),
            (128, 128, 4, 3), (128, 64, 8, 5), (64, 64, 4, 3), (128, 32, 8, 4)]
    full = [(bm, bn, w, s) for bm in (128, 64) for bn in (64, 128, 32) for w in (8, 4) for s in (3, 4, 2, 5)]
    for d, causal in CH06_CASES:
        first = []
        for cfg in base[:2]:
            first.append(_c6("ptr", d, causal, *cfg))
            first.append(_c6("tma", d, causal, *cfg))
        # one masked key loop, warp-specialised (4 warps: Triton 3.6 makes 3 warp groups of them, one of them
        # issuing the TMA copies), and the same loop without warp specialisation, to tell the two effects apart
        first += [_c6("tma-ws", d, causal, 128, 64, 4, 3, ws=True), _c6("tma-ws", d, causal, 128, 128, 4, 2, ws=True),
                  _c6("tma-ws", d, causal, 128, 64, 4, 2, ws=True), _c6("tma-ws", d, causal, 128, 64, 8, 3, ws=False)]
        for cfg in base[2:6]:
            first.append(_c6("ptr", d, causal, *cfg))
            first.append(_c6("tma", d, causal, *cfg))
        first += [_c6("tma-host", d, causal, *cfg) for cfg in base[:4]]
        second = []
        for cfg in base[6:]:
            second += [_c6("tma", d, causal, *cfg), _c6("ptr", d, causal, *cfg)]
        second += [_c6("tma-host", d, causal, *cfg) for cfg in base[4:8]]
        second += [_c6("tma-ws", d, causal, 128, 64, 4, 4, ws=True), _c6("tma-ws", d, causal, 128, 32, 4, 3, ws=True),
                   _c6("tma-ws", d, causal, 128, 128, 4, 3, ws=True), _c6("tma-ws", d, causal, 128, 64, 4, 3, ws=False)]
        third = [_c6(v, d, causal, *cfg) for cfg in full for v in ("tma", "ptr")]
        third = [c for c in third if not (c.kw["BLOCK_M"] == 64 and c.num_warps == 8)]
        seen, case = set(), []
        for c in first + second + third:
            sig = (c.variant, c.consts, c.num_warps, c.num_stages)
            if sig in seen or c.shared_bytes() > H100_SHARED:
                continue
            seen.add(sig)
            case.append(c)
        out.append(case)
    # interleave the four cases, so that a cut run has measured every case as far as it got
    merged = []
    for i in range(max(len(c) for c in out)):
        for case in out:
            if i < len(case):
                c = case[i]
                merged.append(Candidate(c.chapter, c.variant, c.consts, c.num_warps, c.num_stages, c.case, i, c.note))
    return merged


# --------------------------------------------------------------------------------------------- correctness

def ch05_shapes(dry: bool):
    if dry:
        return [(64, 64, 64), (40, 24, 136), (130, 264, 72)]
    return [(129, 264, 72), (1000, 1024, 328), (4096, 4096, 4096), (8192, 8192, 8192)]


def ch06_shapes(d: int, speed_size: tuple, dry: bool):
    if dry:
        return [(1, 2, 77, d), (1, 1, 100, d)]
    return [(1, 2, 77, d), (2, 3, 1000, d), tuple(speed_size[:3]) + (d,)]


class Checker:
    """Fresh random inputs and a higher-precision reference per shape, kept for the candidates that follow
    in this process (float64 for small shapes; float32 without TF32 at the timing sizes)."""

    def __init__(self, device: str, seed: int | None = None):
        import torch

        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed if seed is not None else int.from_bytes(os.urandom(6), "little"))
        self.cache: dict = {}
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def ch05(self, size):
        from grader.chapters import ch05

        if ("ch05", size) not in self.cache:
            a, b = ch05._inputs(size, self.gen, self.device)
            big = size[0] * size[1] * size[2] > 1 << 30
            ref = (a.float() @ b.float()) if big else (a.double() @ b.double())
            self.cache[("ch05", size)] = (a, b, ref)
            self.trim()
        return self.cache[("ch05", size)]

    def ch06(self, size, causal):
        from grader.chapters import ch06

        key = ("ch06", size, causal)
        if key not in self.cache:
            q, k, v = ch06.make_inputs(size, self.gen, self.device)
            self.cache[key] = (q, k, v, attention_reference(q, k, v, causal))
            self.trim()
        return self.cache[key]

    def trim(self) -> None:
        """Give the reference's temporaries back: a dozen workers share the GPU's memory."""
        if self.device == "cuda":
            import torch
            torch.cuda.empty_cache()

    def check(self, cand: Candidate, fn, shapes) -> dict:
        """Every shape: the output poisoned with NaN first, then compared with the reference."""
        import torch

        found = {}
        for size in shapes:
            if cand.chapter == "ch05":
                a, b, ref = self.ch05(size)
                out = torch.full((size[0], size[1]), float("nan"), device=self.device, dtype=torch.float16)
                fn(a, b, out)
                rtol, atol = 2e-3, 1e-3
            else:
                causal = cand.case[1]
                q, k, v, ref = self.ch06(size, causal)
                out = torch.full_like(q, float("nan"))
                fn(q, k, v, out, causal)
                rtol, atol = 1.5e-3, 1.5e-3
            if self.device == "cuda":
                torch.cuda.synchronize()
            err = (out.to(ref.dtype) - ref).abs()
            allowed = atol + rtol * ref.abs()
            bad = ~(err <= allowed)              # NaN counts as bad
            n_bad = int(bad.sum())
            found["x".join(map(str, size))] = {"bad": n_bad, "max_err": float(torch.nan_to_num(err, nan=float("inf")).max())}
            if n_bad:
                return {"correct": False, "shapes": found,
                        "why": f"{n_bad} of {bad.numel()} elements off at {size} (max error {found['x'.join(map(str, size))]['max_err']:.3g})"}
            del out
        return {"correct": True, "shapes": found}


def attention_reference(q, k, v, causal):
    """softmax(q k^T / sqrt(D)) v per (batch, head) slice, float64 for small sizes and float32 (no TF32)
    for the timing size, so memory stays at one batch's scores."""
    import torch

    b, h, n, d = q.shape
    dtype = torch.float64 if n * n * h <= (1 << 24) else torch.float32
    out = torch.empty(q.shape, dtype=dtype, device=q.device)
    heads = max(1, (1 << 26) // (n * n))     # at most 256 MiB of fp32 scores at a time
    above = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None
    for i in range(b):
        for h0 in range(0, h, heads):
            qi, ki, vi = (t[i, h0:h0 + heads].to(dtype) for t in (q, k, v))
            s = (qi @ ki.transpose(-1, -2)) / math.sqrt(d)
            if causal:
                s.masked_fill_(above, float("-inf"))
            out[i, h0:h0 + heads] = torch.softmax(s, dim=-1) @ vi
            del s
    return out


# --------------------------------------------------------------------------------------------- workers

def worker_main(wid: int, task_q, result_q, gpu_lock, lock_holder, dry: bool, speed_size: tuple,
                log_path: str | None = None):
    """A worker process: compile each task's candidate at every shape it is checked at (no GPU work: the
    JIT's warmup), then, holding the GPU lock, run and check it. A CUDA error leaves the process's context
    unusable: the worker reports it and exits, and the parent starts another."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]
    if log_path:   # Triton's compile failures print MLIR reproducers on stderr: keep them out of the main log
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    try:
        import torch
        device = "cpu" if dry else "cuda"
        if not dry:
            torch.cuda.init()
        checker = Checker(device)
    except Exception as exc:  # noqa: BLE001
        result_q.put(("dead", wid, os.getpid(), f"{type(exc).__name__}: {exc}"))
        return
    result_q.put(("ready", wid, os.getpid(), None))
    selftest = os.environ.get("SWEEP_SELFTEST", "")   # "crash:TASK" or "hang:TASK": plumbing tests only
    while True:
        task = task_q.get()
        if task is None:
            return
        tid, cand = task
        result_q.put(("start", wid, tid, None))
        if selftest == f"crash:{tid}":     # the parent's handling of a crashing worker, tested on a CPU
            os._exit(9)
        if selftest == f"hang:{tid}":      # ... and of a hanging one, holding the GPU lock
            with gpu_lock_held(gpu_lock, lock_holder, wid):
                time.sleep(10 ** 6)
        res, fatal = run_task(cand, checker, gpu_lock, lock_holder, wid, dry, speed_size)
        result_q.put(("done", wid, tid, res))
        if fatal:
            result_q.put(("dead", wid, os.getpid(), res.get("error")))
            result_q.close()
            result_q.join_thread()   # the messages reach the parent before this process ends
            os._exit(3)


def task_inputs(cand: Candidate, checker: Checker, size):
    import torch

    if cand.chapter == "ch05":
        a, b, _ = checker.ch05(size)
        return (a, b, torch.empty(size[0], size[1], device=a.device, dtype=torch.float16))
    q, k, v, _ = checker.ch06(size, cand.case[1])
    return (q, k, v, torch.empty_like(q), cand.case[1])


def run_task(cand: Candidate, checker: Checker, gpu_lock, lock_holder, wid: int, dry: bool, speed_size):
    res = {"compile_ok": False, "correct": None}
    compiled = None
    shapes = ch05_shapes(dry) if cand.chapter == "ch05" else ch06_shapes(cand.case[0], speed_size, dry)
    t0 = time.time()
    try:
        fn = cand.launcher()
        if not dry:
            with gpu_lock_held(gpu_lock, lock_holder, wid):   # the inputs and references: GPU work
                for size in shapes:
                    task_inputs(cand, checker, size)
            for size in shapes:           # compile every specialisation first: CPU only, no lock
                compiled = fn(*task_inputs(cand, checker, size), warmup=True)
            meta = getattr(compiled, "metadata", None)
            if meta is not None:          # at the timing size: warps after warp specialisation, shared memory
                res["warps_compiled"] = int(getattr(meta, "num_warps", 0))
                res["shared_compiled"] = int(getattr(meta, "shared", 0))
        res["compile_ok"] = True
        res["compile_s"] = round(time.time() - t0, 2)
    except Exception as exc:  # noqa: BLE001 - a compile error is a finding, never fatal
        res["error"] = f"compile: {type(exc).__name__}: {_first_lines(exc)}"
        res["compile_s"] = round(time.time() - t0, 2)
        return res, False
    t1 = time.time()
    try:
        with gpu_lock_held(gpu_lock, lock_holder, wid):
            found = checker.check(cand, fn, shapes)
        if dry:   # compile and run are one step under the interpreter
            res["compile_s"] = round(time.time() - t0, 2)
        res.update(found)
        res["check_s"] = round(time.time() - t1, 2)
        if compiled is not None:
            try:   # registers and spills of the timing-size compile (known once loaded on the GPU)
                compiled._init_handles()
                res["registers"], res["spills"] = int(compiled.n_regs), int(compiled.n_spills)
            except Exception:  # noqa: BLE001
                pass
        return res, False
    except Exception as exc:  # noqa: BLE001
        text = f"{type(exc).__name__}: {_first_lines(exc)}"
        res["correct"] = False
        res["error"] = f"run: {text}"
        res["check_s"] = round(time.time() - t1, 2)
        fatal = (not dry) and any(s in text for s in ("CUDA error", "illegal", "unspecified launch", "misaligned",
                                                      "an illegal", "CUDA_ERROR", "device-side"))
        if not fatal and not dry:
            try:
                import torch
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                fatal = True
        return res, fatal


class gpu_lock_held:
    """The GPU lock shared by the workers and the timing parent, with the holder's id recorded (so that the
    parent can free it if it has to kill a worker that hangs in a kernel)."""

    def __init__(self, lock, holder, wid):
        self.lock, self.holder, self.wid = lock, holder, wid

    def __enter__(self):
        self.lock.acquire()
        self.holder.value = self.wid

    def __exit__(self, *exc):
        self.holder.value = -1
        self.lock.release()


def _first_lines(exc, n: int = 6, width: int = 600) -> str:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > n:   # a Triton compile error: keep the head and the last lines (the cause)
        lines = lines[:2] + ["..."] + lines[-(n - 2):]
    return " | ".join(lines)[:width]


# --------------------------------------------------------------------------------------------- cross-compile

def xcompile(cand: Candidate, ragged: bool = False) -> dict:
    """Compile the candidate for sm_90 on this machine (no GPU: Triton's cross-compiler, as
    tests/cuda/test_cross_arch.py does) at the timing size (or a ragged size): whether it compiles, its
    shared memory, warps after warp specialisation, registers and spills (ptxas), wgmma count."""
    import torch
    from grader.cuda import archs, crosscompile
    from grader.cuda.resources import assemble_report

    arch = archs.by_name("sm_90")
    fn = cand.launcher()
    meta = "meta"
    if cand.chapter == "ch05":
        m, n, kk = (1000, 1024, 328) if ragged else (4096, 4096, 4096)
        a = torch.empty(m, kk, device=meta, dtype=torch.float16)
        b = torch.empty(kk, n, device=meta, dtype=torch.float16)
        grid, args, kwargs = fn.prepare(a, b, torch.empty(m, n, device=meta, dtype=torch.float16))
        kwargs["NUM_SMS"] = 132
    else:
        d, causal = cand.case
        shape = (2, 3, 1000, d) if ragged else (4, 16, 4096, d)
        q, k, v, o = (torch.empty(shape, device=meta, dtype=torch.float16) for _ in range(4))
        grid, args, kwargs = fn.prepare(q, k, v, o, causal)
    t0 = time.time()
    try:
        compiled = crosscompile.compile_kernel(fn.kernel, args, kwargs, arch)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": f"{type(exc).__name__}: {_first_lines(exc)}", "s": round(time.time() - t0, 1)}
    ptx = compiled.asm["ptx"]
    out = {"ok": True, "shared": int(compiled.metadata.shared), "num_warps": int(compiled.metadata.num_warps),
           "wgmma": ptx.count("wgmma.mma_async"), "tma_loads": ptx.count("cp.async.bulk.tensor"),
           "s": round(time.time() - t0, 1)}
    try:
        ptxas, gpu_name = crosscompile._ptxas_for(arch.number)
        report = assemble_report(ptx, gpu_name, ptxas)
        usage = report.get(compiled.metadata.name) or next(iter(report.values()))
        out.update(registers=usage.registers, spill_bytes=usage.spill_bytes)
    except Exception as exc:  # noqa: BLE001
        out["ptxas"] = f"{type(exc).__name__}: {_first_lines(exc, 2, 200)}"
    out["fits"] = out["shared"] <= H100_SHARED
    return out
