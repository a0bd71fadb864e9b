"""Chapter 10: decode attention over a paged KV cache, graded against the GPU's own memory ceiling.

Exercises
- 10.0  napkin math: the bytes one decode step reads, its time floor at the copy ceiling, and its arithmetic
        intensity with grouped-query attention (CPU-checkable)
- 10a   `decode_attention(q, k_cache, v_cache, block_table, lengths, out)`: one new query token per sequence
        attends to its cached keys and values, read through a block table, in Triton. q and out (B, H, D) fp16;
        k_cache and v_cache (num_pages, P, H_kv, D) fp16 (vLLM's layout: pages of P tokens); block_table
        (B, max_pages) int32, -1 past a sequence's last page; lengths (B,) int32. Query head h reads KV head
        h // (H / H_kv). Graded on correctness and on speed as a fraction of this GPU's copy ceiling measured
        in the same run (bars.toml "10a", kind "copy-ceiling"); gather + SDPA and FlexAttention reported
- 10b   `decode_attention_split(...)`, the same launcher for a few long sequences (one of 32k tokens): each
        sequence's keys split across programs, the partial results merged by the log-sum-exp rule of chapter 7
        (bars.toml "10b", the same kind); 10a's one program per (sequence, KV head) must miss it
- 10.P  diagnose: two recorded profiles of 10b's rungs, the binding constraint (too few programs for the SMs)
- 10c   stretch, `decode_window(q, k_cache, v_cache, block_table, lengths, out)`: a speculative window of W
        query tokens per sequence, q and out (B, W, H, D), the last W cached tokens being the window's own,
        causal among them (bars.toml "10-stretch", reported only)

Every case is a `Decode` (the lengths, heads, head dimension, page size, and how the pages are laid out); the
grader's inputs poison what no query may read (slots past a sequence's length, pages no table names) with
+inf, so a kernel that reads them unmasked returns inf or NaN, as a real cache's stale slots would make it.
Without a GPU, the Triton kernels run through Triton's interpreter on the CPU cases.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..cuda.gpu import arch_here, free_gpu_bytes, gpu_info, gpu_or_reason
from ..errors import CheckFailed, LadderError, NotImplementedYet
from ..harness import answers, plots
from ..harness.answers import call_learner, require_close
from ..harness.exercise import (
    Exercise,
    SmallSizes,
    SpeedResult,
    check_correctness,
    check_speed,
    check_stretch,
    launch,
    learner_for,
    measure_version,
)
from ..harness.quiet import captured_stderr
from ..profiles.diagnose import Case

POISON = float("inf")      # what fills every slot no query may read
FP16 = 2                   # bytes
# (rtol, atol) against float64. A correct kernel (fp32 scores and sums, P rounded to fp16 for the P V product on the
# tensor cores, fp16 output) errs by the output's rounding (2.4e-4 relative) and P's: tests/chapters/test_ch10.py
# measures an emulation of it at under half of this, on sequences of 1 to 3,000 tokens.
TOLERANCE = (2e-3, 2e-3)


# ------------------------------------------------------------------------------------------ a case

@dataclass(frozen=True)
class Decode:
    """One decode step's shapes and cache layout."""
    lengths: tuple[int, ...]      # cached tokens of each sequence (the new token's own K and V included)
    heads: int = 8                # query heads H
    kv_heads: int = 2             # key/value heads H_kv; H / H_kv query heads share each (GQA)
    head_dim: int = 64            # D: 64 or 128
    page: int = 16                # P: tokens a page
    order: str = "shuffled"       # "in order": sequence b's page j is page b * max_pages + j, as in one
                                  # contiguous cache; "shuffled": pages drawn in random order from the pool
    shared: int = 0               # pages of a common prefix: every sequence's first `shared` pages are the same
    window: int = 1               # query tokens a sequence (stretch 10c's speculative window)

    def __post_init__(self):
        if not self.lengths or min(self.lengths) < max(1, self.window):
            raise ValueError(f"every length must be at least 1 and the window {self.window}: {self.lengths}")
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads do not share {self.kv_heads} KV heads evenly")
        if self.order not in ("in order", "shuffled"):
            raise ValueError(f"order {self.order!r}: 'in order' or 'shuffled'")
        if self.shared and min(self.lengths) < self.shared * self.page:
            raise ValueError(f"a shared prefix of {self.shared} pages needs every length >= {self.shared * self.page}")

    @property
    def batch(self) -> int:
        return len(self.lengths)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    def pages_of(self, length: int) -> int:
        return -(-length // self.page)

    @property
    def max_pages(self) -> int:
        return max(self.pages_of(n) for n in self.lengths)

    @property
    def tokens(self) -> int:
        return sum(self.lengths)


def describe(case: Decode) -> str:
    lengths = case.lengths
    shown = (", ".join(f"{n:,}" for n in lengths) if len(lengths) <= 6
             else f"{len(lengths)} lengths {min(lengths):,}-{max(lengths):,}, {case.tokens:,} tokens")
    extra = [case.order + " pages"]
    if case.shared:
        extra.append(f"{case.shared} shared prefix pages")
    if case.window > 1:
        extra.append(f"window {case.window}")
    return (f"B={case.batch} ({shown}) H={case.heads} H_kv={case.kv_heads} D={case.head_dim} P={case.page}, "
            + ", ".join(extra))


def cache_bytes(case: Decode) -> int:
    """The K and V bytes one decode step reads: every cached token of every sequence, once (a prefix page that
    sequences share is read once for each of them, as each sequence's query needs it)."""
    return 2 * case.tokens * case.kv_heads * case.head_dim * FP16


def decode_bytes(case: Decode) -> int:
    """The fewest bytes the step moves: the cache it reads, the queries read and the outputs written (the block
    table's 4 bytes a page are left out: under 0.1% of it at P = 16)."""
    return cache_bytes(case) + 2 * case.batch * case.window * case.heads * case.head_dim * FP16


# ------------------------------------------------------------------------------------------ inputs

def pool_pages(case: Decode) -> int:
    """Pages in the pool: those the tables name, and free pages (poisoned, so that a kernel that reads one fails): at
    least one in 16, and at least as many as one contiguous cache of B x max_pages would hold, so that a kernel that
    ignores the table reads poison or another sequence's keys, never outside the pool."""
    used = case.shared + sum(case.pages_of(n) - case.shared for n in case.lengths)
    return max(used + max(2, used // 16), case.batch * case.max_pages + 1)


def pool_bytes(case: Decode) -> int:
    """Bytes of the K and V pools of a case's inputs."""
    return 2 * pool_pages(case) * case.page * case.kv_heads * case.head_dim * FP16


def _layout(case: Decode, gen: torch.Generator, device: str) -> tuple[torch.Tensor, int]:
    """The block table (on the CPU, int64, -1 past each sequence's pages) and the pool's size in pages."""
    b, mp = case.batch, case.max_pages
    table = torch.full((b, mp), -1, dtype=torch.int64)
    if case.order == "in order":
        for i, n in enumerate(case.lengths):
            table[i, :case.pages_of(n)] = torch.arange(i * mp, i * mp + case.pages_of(n))
        return table, pool_pages(case)
    own = [case.pages_of(n) - case.shared for n in case.lengths]
    pool = pool_pages(case)
    perm = torch.randperm(pool, generator=gen, device=device).cpu()
    table[:, :case.shared] = perm[:case.shared]
    start = case.shared
    for i, n in enumerate(own):
        table[i, case.shared:case.shared + n] = perm[start:start + n]
        start += n
    return table, pool


def make_inputs(case: Decode, gen: torch.Generator, device: str, dtype=torch.float16):
    """(q, k_cache, v_cache, block_table, lengths), fresh from `gen`.

    As in chapter 6, every query head's scores carry a shift of its own (q = z + a, a uniform in [-5, 5], and
    k = z + 3: up to ±170 at D = 128), which softmax ignores and which overflows exp() without the running max.
    Every slot no query may read holds +inf: the slots past each sequence's length in its last page, and every
    page the table does not name."""
    b, h, hkv, d, p = case.batch, case.heads, case.kv_heads, case.head_dim, case.page
    table, pool = _layout(case, gen, device)
    shape = (b, h, d) if case.window == 1 else (b, case.window, h, d)
    shift = 10 * torch.rand((*shape[:-1], 1), generator=gen, device=device) - 5
    q = (torch.randn(shape, generator=gen, device=device) + shift).to(dtype)
    k_cache = torch.full((pool, p, hkv, d), POISON, dtype=dtype, device=device)
    v_cache = torch.full((pool, p, hkv, d), POISON, dtype=dtype, device=device)
    slots = torch.zeros(pool * p, dtype=torch.bool)          # which (page, slot) some sequence reads
    for i, n in enumerate(case.lengths):
        pages = table[i, :case.pages_of(n)]
        slots[(pages[:, None] * p + torch.arange(p)).reshape(-1)[:n]] = True
    live = slots.nonzero().reshape(-1).to(device)
    flat_k, flat_v = k_cache.view(pool * p, hkv, d), v_cache.view(pool * p, hkv, d)
    flat_k[live] = (torch.randn((live.numel(), hkv, d), generator=gen, device=device) + 3).to(dtype)
    flat_v[live] = torch.randn((live.numel(), hkv, d), generator=gen, device=device).to(dtype)
    lengths = torch.tensor(case.lengths, dtype=torch.int32, device=device)
    return q, k_cache, v_cache, table.to(device=device, dtype=torch.int32), lengths


def make_output(case: Decode, device: str) -> torch.Tensor:
    shape = (case.batch, case.heads, case.head_dim) if case.window == 1 else \
        (case.batch, case.window, case.heads, case.head_dim)
    return torch.empty(shape, dtype=torch.float16, device=device)


# ------------------------------------------------------------------------------------------ reference

def gathered(k_cache, v_cache, block_table, lengths, i: int):
    """Sequence i's keys and values in order, (H_kv, L, D) each: its pages through the table, cut at its length."""
    n = int(lengths[i])
    p = k_cache.shape[1]
    pages = block_table[i, :-(-n // p)].long()
    k = k_cache[pages].flatten(0, 1)[:n].transpose(0, 1)
    v = v_cache[pages].flatten(0, 1)[:n].transpose(0, 1)
    return k, v


def decode_reference(q, k_cache, v_cache, block_table, lengths):
    """Exact decode attention in the inputs' precision (float64 here), one sequence at a time, on the cache
    gathered through the block table. q (B, H, D), or (B, W, H, D) for a window of W queries, the last W cached
    tokens being theirs: query w sees the first L - W + w + 1 tokens."""
    window = q.dim() == 4
    qw = q if window else q[:, None]
    b, w, h, d = qw.shape
    hkv = k_cache.shape[2]
    out = torch.empty_like(qw)
    for i in range(b):
        k, v = gathered(k_cache, v_cache, block_table, lengths, i)
        n = k.shape[1]
        # (H_kv, group, W, D): the query heads that share a KV head together
        qi = qw[i].permute(1, 0, 2).reshape(hkv, h // hkv, w, d)
        s = torch.einsum("kgwd,knd->kgwn", qi, k) / math.sqrt(d)
        visible = torch.arange(n, device=q.device)[None, :] <= (n - w + torch.arange(w, device=q.device))[:, None]
        s = s.masked_fill(~visible, float("-inf"))
        o = torch.einsum("kgwn,knd->kgwd", torch.softmax(s, dim=-1), v)
        out[i] = o.reshape(h, w, d).permute(1, 0, 2)
    return out if window else out[:, 0]


# ------------------------------------------------------------------------------------------ torch's ways

def gather_sdpa(q, k_cache, v_cache, block_table, lengths, out=None):
    """What a PyTorch user writes: gather every sequence's pages into a padded (B, H_kv, max_pages * P, D)
    copy, zero the slots past each length (they may hold anything, even inf), then SDPA with a mask and
    grouped-query attention. The gathered copy is as large as the cache it reads."""
    from torch.nn.functional import scaled_dot_product_attention

    pages = block_table.clamp(min=0).long()
    k = k_cache[pages].flatten(1, 2)                                 # (B, max_pages * P, H_kv, D)
    v = v_cache[pages].flatten(1, 2)
    valid = torch.arange(k.shape[1], device=q.device)[None, :] < lengths[:, None]
    k = torch.where(valid[..., None, None], k, 0).transpose(1, 2)
    v = torch.where(valid[..., None, None], v, 0).transpose(1, 2)
    return scaled_dot_product_attention(q[:, :, None], k, v, attn_mask=valid[:, None, None, :], enable_gqa=True)


# The query block of the paged block mask. FlexAttention's decoding kernel (torch/_inductor/kernel/flex/
# flex_decoding.py) holds the query heads of a KV head's group as one tile of BLOCK_M rows, at least 16, and keeps only
# the configurations whose sparse query block is a multiple of BLOCK_M: a mask with query blocks of 1 left none, and
# compiling it failed ("NoValidChoicesError: No choices to select", torch 2.11 on an H200). One block of 128 rows,
# FlexAttention's own default, holds a decode step's single query and any group of up to 128 query heads.
FLEX_Q_BLOCK = 128


def flex_unavailable() -> str | None:
    """Why this torch cannot build FlexAttention's paged baseline, in words; None where it can."""
    try:
        from torch.nn.attention.flex_attention import BlockMask, flex_attention  # noqa: F401
    except ImportError:
        return f"this torch ({torch.__version__}) has no FlexAttention (torch.nn.attention.flex_attention)"
    if "seq_lengths" not in inspect.signature(BlockMask.from_kv_blocks).parameters:
        return (f"this torch's ({torch.__version__}) BlockMask.from_kv_blocks takes no seq_lengths, which a block mask "
                "over a paged cache needs (its pool is longer than any sequence)")
    return None


def paged_block_mask(block_table, lengths, num_pages: int, page: int):
    """FlexAttention's view of the paged cache: the cache is one long sequence of num_pages * page tokens
    (batch 1, broadcast over the queries' batch), and sequence b's block mask names its pages, in the table's
    order, with a mask_mod that keeps the slots before its length (torch's experimental PagedAttention builds
    the same from its own page table). A page shared by several sequences is mapped back for each. Key blocks are
    pages; the one query block is FLEX_Q_BLOCK rows (why: above)."""
    from torch.nn.attention.flex_attention import BlockMask

    b = block_table.shape[0]
    device = block_table.device
    used = block_table >= 0
    kv_num_blocks = used.sum(1).to(torch.int32).view(b, 1, 1)
    kv_indices = torch.zeros((b, 1, 1, num_pages), dtype=torch.int32, device=device)
    kv_indices[:, 0, 0, :block_table.shape[1]] = block_table.clamp(min=0)
    logical = torch.full((b, num_pages), -1, dtype=torch.int32, device=device)
    rows = torch.arange(b, device=device)[:, None].expand_as(block_table)
    cols = torch.arange(block_table.shape[1], device=device, dtype=torch.int32)[None, :].expand_as(block_table)
    logical[rows[used], block_table[used].long()] = cols[used]

    def in_sequence(bi, h, q_idx, kv_idx):
        j = logical[bi, kv_idx // page]
        return (j >= 0) & (j * page + kv_idx % page < lengths[bi])

    return BlockMask.from_kv_blocks(kv_num_blocks, kv_indices, BLOCK_SIZE=(FLEX_Q_BLOCK, page), mask_mod=in_sequence,
                                    seq_lengths=(1, num_pages * page))


def flex_paged(compiled: bool = True) -> Callable:
    """torch's FlexAttention with a paged block mask, compiled, as an `others` entry: the mask is built on the
    first call for the inputs it is given (once per set of inputs, as a server builds it once a step for every
    layer), then each call is one compiled decode kernel on the cache where it lies. It is timed, never checked:
    it computes every slot of a page it visits and masks their scores, so on the grader's inputs, whose slots past
    each length hold +inf, a weight of 0 meets a value of inf and its output is NaN (tests/chapters/test_ch10.py);
    on a cache whose stale slots are finite it is right. Where this torch cannot run it, it says so in words
    (`flex_unavailable`), which the report prints as "not measured: ...". `compiled=False`: eager, as the CPU tests
    run it (compiling takes seconds there, and only a GPU times it)."""
    why = flex_unavailable()
    if why is not None:
        raise LadderError(why)
    from torch.nn.attention.flex_attention import flex_attention

    attend = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    masks: dict = {}

    def run(q, k_cache, v_cache, block_table, lengths, out=None):
        key = (block_table.data_ptr(), lengths.data_ptr(), tuple(block_table.shape))
        if key not in masks:
            masks.clear()
            masks[key] = paged_block_mask(block_table, lengths, k_cache.shape[0], k_cache.shape[1])
        pool, p, hkv, d = k_cache.shape
        k = k_cache.view(1, pool * p, hkv, d).transpose(1, 2)
        v = v_cache.view(1, pool * p, hkv, d).transpose(1, 2)
        return attend(q[:, :, None], k, v, block_mask=masks[key], enable_gqa=True)

    return run


# ------------------------------------------------------------------------------------------ the cases

# The timing sizes: a serving step of Llama-3-8B's attention shape (32 query heads, 8 KV heads of 128: 4 KiB of
# fp16 K and V a token and layer). 10a: 64 sequences of ragged lengths, 1,024 to 7,168 tokens, 262,144 in all:
# 1 GiB of cache, twenty times an H200's L2. 10b: one sequence of 32,768 tokens and three short ones.
SPEED_LENGTHS = tuple(1024 + (i * 797) % 6145 for i in range(64))
SPEED = Decode(SPEED_LENGTHS, heads=32, kv_heads=8, head_dim=128, page=16)
SPLIT_SPEED = Decode((32768, 1111, 517, 2049), heads=32, kv_heads=8, head_dim=128, page=16)
WINDOW_SPEED = dataclasses.replace(SPEED, window=4)
# Memory a speed check needs, in multiples of the cache: two timed input sets and their pristine copies, the
# float64 reference's copy of the whole cache (4x), and gather + SDPA's gathered, zeroed and (for GQA, in SDPA's
# math backend) repeated copies.
SPEED_MEMORY_MULTIPLE = 16

# Visible cases: the tables in order (as a contiguous cache would be); lengths that end mid-page.
VISIBLE = (Decode((1000, 37, 2049, 500), heads=32, kv_heads=8, head_dim=64),
           Decode((300, 17, 64), heads=8, kv_heads=8, head_dim=64),
           Decode((4096, 1, 129), heads=16, kv_heads=2, head_dim=64))
VISIBLE = tuple(dataclasses.replace(c, order="in order") for c in VISIBLE)
# Hidden: length 1 alone; lengths that are not multiples of P; tables out of order; a shared prefix; the largest
# head dimension the chapter supports (128), with every group size.
HIDDEN = (Decode((1,), heads=8, kv_heads=2, head_dim=64),
          Decode((31, 1, 15, 17, 33), heads=8, kv_heads=4, head_dim=64),
          Decode((3000, 250, 1024, 7), heads=32, kv_heads=8, head_dim=128),
          Decode((700, 650, 900), heads=16, kv_heads=4, head_dim=128, shared=20),
          Decode((2000, 100), heads=8, kv_heads=1, head_dim=128),
          Decode((513, 40), heads=4, kv_heads=4, head_dim=128, page=32))
# Without a GPU (Triton's interpreter): the same kinds of case, small.
CPU_VISIBLE = (Decode((150, 17, 1), heads=8, kv_heads=2, head_dim=64, order="in order"),
               Decode((33, 64), heads=2, kv_heads=2, head_dim=64, order="in order"))
CPU_HIDDEN = (Decode((1,), heads=4, kv_heads=2, head_dim=64),
              Decode((31, 15, 33), heads=8, kv_heads=2, head_dim=128),
              Decode((70, 65), heads=4, kv_heads=1, head_dim=64, shared=3))
# 10b: few sequences, one long. Correct whatever the split; the CPU ones long enough to split at all.
SPLIT_VISIBLE = (Decode((8192,), heads=32, kv_heads=8, head_dim=128),
                 Decode((5000, 3, 260, 1023), heads=16, kv_heads=4, head_dim=64))
SPLIT_HIDDEN = (Decode((32768, 1, 17), heads=32, kv_heads=8, head_dim=128),
                Decode((1,), heads=8, kv_heads=8, head_dim=64),
                Decode((12345, 999), heads=8, kv_heads=1, head_dim=128, shared=50))
SPLIT_CPU = (Decode((600,), heads=8, kv_heads=2, head_dim=64),
             Decode((333, 2, 70), heads=2, kv_heads=2, head_dim=64, order="in order"))
SPLIT_CPU_HIDDEN = (Decode((40, 520), heads=4, kv_heads=1, head_dim=128, shared=2),)
WINDOW_VISIBLE = (Decode((1000, 37, 500), heads=32, kv_heads=8, head_dim=128, window=4),
                  Decode((300, 8), heads=8, kv_heads=2, head_dim=64, window=8))
WINDOW_CPU = (Decode((40, 9), heads=8, kv_heads=2, head_dim=64, window=4),)
# The one launch a speed cell makes without a GPU, to tell a stub from a kernel (`_require_written`): any case would
# do, so the one the interpreter runs fastest.
STUB_PROBE = Decode((1,), heads=2, kv_heads=1, head_dim=64)


def _fits(case: Decode) -> Decode:
    """`case` with fewer sequences until a speed check's memory (SPEED_MEMORY_MULTIPLE x its cache) fits in 80%
    of free memory: a T4's 15 GiB hold half of 10a's batch."""
    free = free_gpu_bytes()
    while SPEED_MEMORY_MULTIPLE * pool_bytes(case) > 0.8 * free and case.batch > 1:
        case = dataclasses.replace(case, lengths=case.lengths[:max(1, case.batch // 2)])
    return case


def _exercise(key: str, title: str, where: str, signature: str, visible, cpu, speed: Decode, hint: str) -> Exercise:
    return Exercise(
        key=key, title=title, where=where, signature=signature,
        arg_names=("q", "k_cache", "v_cache", "block_table", "lengths"),
        make_inputs=make_inputs, make_output=make_output, reference=decode_reference,
        baseline=gather_sdpa, baseline_name="gather + SDPA", dtype=torch.float16, bytes_moved=decode_bytes,
        visible_sizes=visible, speed_size=lambda: _fits(speed), describe_size=describe, ceiling="copy_gbps",
        others={"FlexAttention (paged block mask)": flex_paged}, tolerance=lambda case: TOLERANCE,
        cpu_sizes=cpu, speed_hint=hint)


DECODE = _exercise(
    "10a", "paged decode attention", "the code cell under 'Exercise 10a'",
    "decode_attention(q, k_cache, v_cache, block_table, lengths, out)", VISIBLE, CPU_VISIBLE, SPEED,
    "one program per (sequence, KV head), holding the group's query heads as one 16-row tile; loop over BLOCK_N = 64 "
    "tokens at a time, gathering each token's page from the block table, with tl.dot for Q K^T and P V and the "
    "online softmax of chapter 6; 4 warps.")
SPLIT = _exercise(
    "10b", "split-KV decode attention", "the code cell under 'Exercise 10b'",
    "decode_attention_split(q, k_cache, v_cache, block_table, lengths, out)", SPLIT_VISIBLE, SPLIT_CPU,
    SPLIT_SPEED,
    "split each sequence's tokens into chunks of a few hundred, one program per (sequence, KV head, chunk), each "
    "writing its normalised partial output and its log-sum-exp; a second kernel merges a head's chunks. Enough "
    "chunks that the long sequence alone gives every SM several programs.")
WINDOW = dataclasses.replace(
    _exercise("10c", "speculative-window decode attention", "the code cell under 'Stretch: a speculative window'",
              "decode_window(q, k_cache, v_cache, block_table, lengths, out)", WINDOW_VISIBLE, WINDOW_CPU,
              WINDOW_SPEED, ""),
    baseline=lambda q, k_cache, v_cache, block_table, lengths, out=None: window_gather_sdpa(
        q, k_cache, v_cache, block_table, lengths),
    others={})

EXERCISES = (DECODE, SPLIT, WINDOW)
BAR_KEYS = {"10a": "10a", "10b": "10b", "10-stretch": "10c"}
_SANITIZE_CASES = (Decode((1, 17, 40), heads=8, kv_heads=2, head_dim=64),
                   Decode((33, 300), heads=4, kv_heads=2, head_dim=128, shared=2))
# memcheck only, as chapter 6: Triton places shared memory and barriers itself.
SANITIZER_TOOLS = ("memcheck",)
SANITIZE = (SmallSizes(DECODE, "decode_attention", _SANITIZE_CASES),
            SmallSizes(SPLIT, "decode_attention_split", _SANITIZE_CASES),
            SmallSizes(WINDOW, "decode_window", (Decode((9, 40), heads=8, kv_heads=2, head_dim=64, window=4),),
                       stretch=True))


def window_gather_sdpa(q, k_cache, v_cache, block_table, lengths):
    """10c's baseline: gather + SDPA with the window's causal mask added to the lengths'."""
    from torch.nn.functional import scaled_dot_product_attention

    b, w, h, d = q.shape
    pages = block_table.clamp(min=0).long()
    k = k_cache[pages].flatten(1, 2)
    v = v_cache[pages].flatten(1, 2)
    n = torch.arange(k.shape[1], device=q.device)
    valid = n[None, :] < lengths[:, None]
    k = torch.where(valid[..., None, None], k, 0).transpose(1, 2)
    v = torch.where(valid[..., None, None], v, 0).transpose(1, 2)
    sees = n[None, None, :] <= (lengths[:, None] - w + torch.arange(w, device=q.device)[None, :])[..., None]
    return scaled_dot_product_attention(q.transpose(1, 2), k, v, attn_mask=sees[:, None], enable_gqa=True)


# ------------------------------------------------------------------------------------------ launch choices

def kv_tile() -> int:
    """Tokens a decode program takes per step on the GPU compiled for: 64, or 32 on sm_75, where Triton
    makes tl.dot of FMA instructions and 64 tokens spill registers (255 a thread and 404 bytes of spill,
    cross-compiled with Triton 3.9; 32 tokens take 212 and spill nothing). Without a GPU, 64."""
    arch = arch_here()
    return 32 if arch is not None and arch.capability < (8, 0) else 64


def group_rows(heads: int, kv_heads: int) -> int:
    """Rows of the query tile a program holds: its group of query heads, padded to 16, tl.dot's smallest M."""
    g = heads // kv_heads
    return max(16, 1 << (g - 1).bit_length())


def programs(case: Decode, splits: int = 1) -> int:
    """Programs of a launch with one program per (sequence, KV head) and `splits` chunks of each sequence."""
    return case.batch * case.kv_heads * splits


# ------------------------------------------------------------------------------------------ 10.0, napkin math

def check_napkin_math(decode_bytes_fn, time_floor_us, intensity) -> None:
    """Exercise 10.0: the bytes of one decode step, its floor in microseconds at a copy rate, and its FLOPs per
    byte of cache."""
    names = "`decode_bytes`, `time_floor_us` and `intensity`"
    for lengths, h, hkv, d in (((1,), 1, 1, 64), ((4096,) * 8, 32, 8, 128), ((1000, 37, 2049), 32, 32, 128),
                               ((5, 7), 16, 2, 64)):
        case = Decode(tuple(lengths), heads=h, kv_heads=hkv, head_dim=d)
        require_close(call_learner(decode_bytes_fn, list(lengths), h, hkv, d, exercise="10.0", names=names),
                      decode_bytes(case),
                      f"decode_bytes({list(lengths) if len(lengths) < 5 else '[4096] * 8'}, {h}, {hkv}, {d}) (hint: "
                      "K and V for every cached token, H_kv heads of D fp16 values each; plus q read and out "
                      "written, H heads of D each)")
    for nbytes, gbps in ((1 << 30, 4000.0), (2 * 10**9, 1000.0), (64, 1.0)):
        require_close(call_learner(time_floor_us, nbytes, gbps, exercise="10.0", names=names), nbytes / gbps / 1e3,
                      f"time_floor_us({nbytes!r}, {gbps!r}) (hint: 1 GB/s is 1e9 bytes a second; answer in "
                      "microseconds)")
    for h, hkv, d in ((32, 8, 128), (32, 32, 128), (64, 8, 64), (8, 1, 128)):
        require_close(call_learner(intensity, h, hkv, d, exercise="10.0", names=names), h / hkv,
                      f"intensity({h}, {hkv}, {d}) (hint: for one cached token and one KV head, count the FLOPs "
                      "of its scores and its share of P V for every query head that reads it, over the 2 D fp16 "
                      "values of K and V it reads)")
    case = SPEED
    print(f"✓ 10.0 napkin math: right. 10a's timing case reads {cache_bytes(case) / 2**30:.2f} GiB of cache; with "
          f"a KV head for each of its {case.heads} query heads it would read {case.group}x that, "
          f"{case.group * cache_bytes(case) / 2**30:.1f} GiB. Its intensity, {case.group} FLOPs a byte, is far "
          "below any GPU's ridge point (the fp16 matmul ceiling over the copy ceiling).")


# ------------------------------------------------------------------------------------------ 10a, 10b

def check_decode(decode_attention, sizes=None, trials: int = 2):
    """Correctness of `decode_attention` at each case (sizes=None: the visible cases on a GPU, the CPU cases
    without one, through Triton's interpreter)."""
    return check_correctness(DECODE, decode_attention, sizes, trials)


def check_decode_speed(decode_attention) -> SpeedResult:
    """10a at its timing size, as a fraction of the copy ceiling measured in the same run (bar "10a")."""
    _require_written(DECODE, decode_attention)
    return check_speed(DECODE, decode_attention, "10a")


def check_split(decode_attention_split, sizes=None, trials: int = 2):
    return check_correctness(SPLIT, decode_attention_split, sizes, trials)


def check_split_speed(decode_attention_split) -> SpeedResult:
    """10b at its timing size (one sequence of 32,768 tokens, three short), against the same kind of bar."""
    _require_written(SPLIT, decode_attention_split)
    return check_speed(SPLIT, decode_attention_split, "10b")


def measure_unsplit(decode_attention) -> SpeedResult | None:
    """10a's kernel at 10b's timing size, against 10b's bar: the rung below 10b (ungraded)."""
    return measure_version(SPLIT, decode_attention, "your 10a kernel (one program per sequence and KV head) at "
                           "10b's size", bar_key="10b")


def _require_written(ex: Exercise, fn) -> None:
    """Without a GPU a speed cell measures nothing, but a stub should still say "not written yet": one tiny launch
    through the interpreter, whose only verdict let through is that one."""
    if gpu_or_reason()[0]:
        return
    gen = torch.Generator().manual_seed(0)
    case = STUB_PROBE
    with captured_stderr():
        try:
            launch(ex, learner_for(ex, fn), ex.make_inputs(case, gen, "cpu"), ex.make_output(case, "cpu"))
        except NotImplementedYet:
            raise
        except LadderError:
            pass


def check_window_stretch(decode_window) -> SpeedResult | None:
    """Stretch 10c: correct on the window cases (the CPU's without a GPU), then timed against bar "10-stretch",
    reported only. Never stops Run All."""
    if gpu_or_reason()[0]:
        return check_stretch(WINDOW, decode_window, "10-stretch", WINDOW.visible_sizes, "decode_window")
    try:
        check_correctness(WINDOW, decode_window, WINDOW_CPU, trials=1)
    except NotImplementedError:
        print("Stretch goal not attempted yet: write decode_window above to try it.")
    except LadderError as exc:
        print(str(exc))
    return None


# ------------------------------------------------------------------------------------------ plots

def plot_results(*results: SpeedResult | None):
    """GB/s of your kernels beside gather + SDPA and FlexAttention, under the copy ceiling each speed cell
    measured in its own run."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 10 on {gpu}")


def occupancy_note(case: Decode, splits: int = 1) -> str:
    """How many programs a launch gives each SM of this GPU (or an H200's 132 without one)."""
    info = gpu_info()
    sms = info.sm_count if info else 132
    n = programs(case, splits)
    where = info.name if info else "an H200 (no GPU here)"
    return f"{n:,} programs for the {sms} SMs of {where}: {n / sms:.2f} a SM"


# ------------------------------------------------------------------------------------------ cross-architecture builds

def solution_launches(ns: dict, device: str = "meta") -> list[Callable[[], object]]:
    """Calls that reach every Triton kernel of the solution notebook (`ns`: its cells run), at the timing sizes (D =
    128, the largest the chapter takes, holds the most registers): grader/notebooks/shipped.py records their launches
    and compiles each for other architectures. Meta tensors: nothing is allocated or run."""
    calls = []
    for case, name in ((SPEED, "decode_attention"), (SPLIT_SPEED, "decode_attention_split"),
                       (WINDOW_SPEED, "decode_window")):
        if name not in ns:
            continue
        args = _meta_inputs(case, device)
        calls.append(lambda args=args, name=name: ns[name](*args))
    return calls


def _meta_inputs(case: Decode, device: str):
    pool = pool_pages(case)
    shape = (case.batch, case.heads, case.head_dim) if case.window == 1 else \
        (case.batch, case.window, case.heads, case.head_dim)
    q = torch.empty(shape, device=device, dtype=torch.float16)
    cache = torch.empty((pool, case.page, case.kv_heads, case.head_dim), device=device, dtype=torch.float16)
    table = torch.empty((case.batch, case.max_pages), device=device, dtype=torch.int32)
    lengths = torch.empty((case.batch,), device=device, dtype=torch.int32)
    return q, cache, cache, table, lengths, torch.empty_like(q)


# ------------------------------------------------------------------------------------------ 10.P, diagnose

# Two profiles of 10b's rungs recorded on an H200 (assets/profiles/H200/10b, by assets/results/gpu_measure.sh
# ch10 profile); the learner names what binds the first and the rung that relieves it. tests/profiling/
# test_diagnose.py checks the answer key, and the figures `why` quotes, against the recorded numbers.
DIAGNOSE = Case(
    key="10.P", exercise="10b", rung="unsplit", beside="solution", binding="too-few-programs",
    next_rung="split each sequence's tokens across several programs and merge their partial results",
    choices=("16-byte loads of K and V", "a larger BLOCK_N, to keep more bytes in flight in each program",
             "split each sequence's tokens across several programs and merge their partial results",
             "store the cache in fp8"),
    why="One program per (sequence, KV head) is 32 programs at 10b's size, under one for each of the 132 SMs: "
        "0.06 waves, most SMs with nothing to run, and DRAM at 4% of its peak though every byte of the cache is "
        "needed; split, the same cache keeps DRAM at 62% over 3.88 waves. Wider loads or a larger tile change what "
        "each busy SM does, not how many are busy; fp8 halves the bytes but not the idle SMs. Splitting the long "
        "sequence's tokens gives every SM programs to run. Its shared loads are 9.6-way, but neither shared-memory "
        "stall (mio throttle, short scoreboard) is its top one: the conflicts are not what its warps wait on.",
    gpu="H200")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
