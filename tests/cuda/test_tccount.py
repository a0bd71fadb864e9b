"""Counting the multiply-adds tensor cores execute (grader.cuda.tccount) and chapter 4's verdict on the
count. The PTX is instrumented and assembled with ptxas on the CPU (the dev extra ships one); the
counts themselves need a GPU."""

import pytest

from conftest import HAS_GPU, ROOT
from grader.cuda import sass, tccount
from grader.cuda.nvrtc import compile_cuda
from grader.chapters import ch04, ch06
from grader.errors import CheckFailed
from grader.learner.cells import cuda_sources
from submissions.build import launchers
from submissions.wrong import dead_branch_mma

SOLUTION = ROOT / "solutions/04_tensor_cores/04_tensor_cores.ipynb"
SOURCES = dict(cuda_sources(SOLUTION)[0])
DEAD_SRC = dead_branch_mma.CELLS["wmma-solution"].split('r"""', 1)[1].split('"""', 1)[0]


@pytest.mark.parametrize("opcode, per_thread", [
    ("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32", 16 * 16 * 16 // 32),
    ("wmma.mma.sync.aligned.row.col.m32n8k16.f32.f16", 32 * 8 * 16 // 32),
    ("wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32", 16 * 16 * 8 // 32),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16 * 8 * 16 // 32),
    ("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", 16 * 8 * 8 // 32),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", 4 * 8 * 8 * 4 // 32),   # four 8x8x4 per warp
    ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8 * 8 * 4 // 32),       # one 8x8x4 per warp
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", 64 * 128 * 16 // 128),
    ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", None),
    ("fma.rn.f32", None),
    ("red.global.add.u64", None),
])
def test_multiply_adds_per_thread_of_each_tensor_core_opcode(opcode, per_thread):
    assert tccount.macs_per_thread(opcode) == per_thread


def test_every_mma_gets_a_counter_before_it_with_its_guard():
    ptx = ("//\n.version 8.8\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n)\n{\n"
           "\t@%p3 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4},\n"
           "\t\t{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};\n"
           "\t// wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 in a comment\n"
           "\twmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%f5}, {%r7}, {%r8}, {%f5};\n"
           "\tret;\n}\n")
    inst = tccount.instrument_ptx(ptx)
    lines = inst.ptx.splitlines()
    assert inst.sites == 2 and not inst.unweighed
    assert lines[lines.index(".address_size 64") + 1] == f".visible .global .align 8 .u64 {tccount.COUNTER};"
    guarded = next(i for i, l in enumerate(lines) if "mma.sync.aligned.m16n8k16" in l)
    assert lines[guarded - 1].strip() == ("{ .reg .u64 %ladder_w; mov.u64 %ladder_w, 64; "
                                          f"@%p3 red.global.add.u64 [{tccount.COUNTER}], %ladder_w; }}")
    plain = next(i for i, l in enumerate(lines) if l.startswith("\twmma.mma"))
    assert "mov.u64 %ladder_w, 128; red.global.add.u64" in lines[plain - 1]
    assert sum("red.global.add.u64" in l for l in lines) == 2   # not before the comment
    assert tccount.instrument_ptx(ptx.replace("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32",
                                              "tcgen05.mma.cta_group::1.kind::f16")).unweighed \
        == ["tcgen05.mma.cta_group::1.kind::f16"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source, name, sites", [(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm", 16),
                                                 (DEAD_SRC, "wmma_gemm", 1)])
def test_instrumented_kernels_assemble_with_a_red_before_each_hmma(arch, source, name, sites):
    """The instrumented PTX is valid (ptxas accepts it), and the machine code has the atomic adds."""
    if not tccount.ptxas_candidates():
        pytest.skip("no ptxas here (the dev extra's nvidia-cuda-nvcc-cu12 or Triton ships one)")
    compiled = compile_cuda(source, name, arch)
    inst = tccount.instrument_ptx(compiled.ptx)
    assert inst.sites == sites == compiled.ptx.count("\twmma.mma.sync")
    cubin, refusals = tccount.assemble(inst.ptx, arch)
    assert cubin is not None, refusals
    disassembler = sass.find_disassembler()
    assert disassembler is not None, "no nvdisasm: the nvidia-cuda-nvdisasm dependency is missing"
    text = sass._run_disassembler(*disassembler, cubin)
    body = sass.parse_sass(text)[name]
    reds = [i for i in body if " RED" in i or "REDG" in i or " ATOM" in i]
    hmma = [i for i in body if "HMMA" in i]
    assert hmma and len(reds) >= 1


# --------------------------------------------------------------------------- chapter 4's verdict

LISTINGS = [sass.Listing("wmma_gemm", "sm_90", "", ("/*0000*/ HMMA.16816.F32 R0, R4, R8, R0",), "cuobjdump", "", "")]
NEED = ch04.COUNT_SIZE[0] * ch04.COUNT_SIZE[1] * ch04.COUNT_SIZE[2]


def _counted(macs=None, uncounted=None, unweighed=None):
    return tccount.Tally(macs or {}, uncounted or {}, unweighed or {})


def test_every_multiply_add_on_tensor_cores_passes():
    ch04._judge_count(_counted({"wmma_gemm": NEED}), {"wmma_gemm"}, LISTINGS, "4")
    ch04._judge_count(_counted({"wmma_gemm": NEED + 4096 * 9}), {"wmma_gemm"}, LISTINGS, "4")  # padded tiles


@pytest.mark.parametrize("done, percent", [(0, "0%"), (NEED // 2, "50%"), (NEED - 4096, "100%")])
def test_too_few_tensor_core_multiply_adds_fail(done, percent):
    with pytest.raises(CheckFailed) as info:
        ch04._judge_count(_counted({"wmma_gemm": done}), {"wmma_gemm"}, LISTINGS, "4")
    assert info.value.reason == "no-tensor-cores"
    msg = str(info.value)
    assert f"did {done:,} multiply-adds ({percent} of the {NEED:,}" in msg and "branch that never runs" in msg


def test_opcodes_that_cannot_be_counted_count_nothing():
    with pytest.raises(CheckFailed, match=r"yours include mma\.sp\.sync.*count nothing"):
        ch04._judge_count(_counted({"wmma_gemm": 0}, unweighed={"wmma_gemm": ["mma.sp.sync.aligned.m16n8k32"]}),
                          {"wmma_gemm"}, LISTINGS, "4")


def test_a_machine_that_cannot_count_scores_by_the_unchecked_policy(capsys, monkeypatch):
    """No cell passes on a count that did not run: `unchecked`, 0 points by default; with LADDER_UNCHECKED=full
    the points, and a note that says what was not checked."""
    uncounted = _counted(uncounted={"wmma_gemm": "CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION"})
    monkeypatch.delenv("LADDER_UNCHECKED", raising=False)
    with pytest.raises(CheckFailed) as exc:
        ch04._judge_count(uncounted, {"wmma_gemm"}, LISTINGS, "4")
    assert exc.value.reason == "unchecked" and "UNSUPPORTED_PTX_VERSION" in str(exc.value)
    monkeypatch.setenv("LADDER_UNCHECKED", "full")
    ch04._judge_count(uncounted, {"wmma_gemm"}, LISTINGS, "4")
    out = capsys.readouterr()
    assert "could not run" in out.out and "UNSUPPORTED_PTX_VERSION" in out.out and not out.err


def test_a_kernel_run_that_was_not_inspected_fails():
    with pytest.raises(CheckFailed, match="ran `other`, which was not among the inspected kernels"):
        ch04._judge_count(_counted({"wmma_gemm": NEED}), {"wmma_gemm", "other"}, LISTINGS, "4")


# ------------------------------------------------------------------------------------ on a GPU

def _count(name, size=ch04.COUNT_SIZE):
    import torch

    fn = launchers(*name.split("/"), ["wmma-solution"])["wmma_gemm"]
    m, n, k = size
    gen = torch.Generator(device="cuda").manual_seed(1234)
    a = torch.randn(m, k, generator=gen, device="cuda").half()
    b = torch.randn(k, n, generator=gen, device="cuda").half()
    out = torch.full((m, n), float("nan"), device="cuda")
    with tccount.counting() as tally:
        fn(a, b, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), a.double() @ b.double(), rtol=1e-5, atol=4e-6 * k + 1e-5)
    return tally


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU")
def test_gpu_counts_exactly_the_solutions_multiply_adds():
    """128 x 128 x 32 block tiles divide 768 exactly: the count must be M*N*K, no more, no less."""
    tally = _count("ch04/correct")
    assert tally.macs == {"wmma_gemm": NEED} and not tally.uncounted and not tally.unweighed
    # Ragged: edge tiles are padded (at most up to 128 x 128 x 32), so the tensor cores do more.
    m, n, k = 200, 312, 100
    done = _count("ch04/correct", (m, n, k)).macs["wmma_gemm"]
    assert m * n * k <= done <= 256 * 384 * 128


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU")
def test_gpu_counts_nothing_for_an_mma_in_a_branch_that_never_runs():
    tally = _count("wrong/dead_branch_mma")
    assert tally.macs == {"wmma_gemm": 0} and not tally.uncounted


@pytest.mark.skipif(HAS_GPU, reason="CPU behaviour")
def test_counting_restores_the_launcher_and_keeps_the_no_gpu_message():
    from grader.cuda.kernels import load_kernel
    from grader.errors import NoGPUError

    from grader.cuda import launches

    kernel = load_kernel(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm")
    with pytest.raises(NoGPUError, match="cannot run `wmma_gemm`"):
        with tccount.counting() as tally:
            assert len(launches._HANDLERS) == 1
            kernel((1,), (32,), ())
    assert launches._HANDLERS == [] and tally.macs == {}


# --------------------------------------------------------------------------------- Triton kernels

def _flash_kernel():
    """ch06_minimal's kernel (a JITFunction): flash_forward(Q, K, V, O, N, sm_scale, D, BLOCK_M, BLOCK_N, CAUSAL)."""
    from triton.runtime.jit import JITFunction

    ns = launchers("correct", "ch06_minimal", ["attention-solution"])
    return next(v for v in ns.values() if isinstance(v, JITFunction))


def _compile_flash(cap: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "N": "i32", "sm_scale": "fp32",
           "D": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "CAUSAL": "constexpr"}
    consts = {"D": 64, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": True}
    return triton.compile(ASTSource(_flash_kernel(), sig, constexprs=consts), target=GPUTarget("cuda", cap, 32))


@pytest.mark.parametrize("cap, opcode", [(90, "wgmma.mma_async"), (80, "mma.sync")])
def test_triton_kernels_compile_with_a_counter_before_each_mma(cap, opcode, tmp_path):
    """Without a GPU, Triton still compiles for a named target: the hook must instrument the PTX it
    generates (wgmma on Hopper, mma.sync on Ampere), ptxas must accept it, and nothing of it may leak
    into a later compile or into Triton's usual cache."""
    from triton import knobs

    address = 0x7F00_0000_1000
    compiled = []
    cache_before = knobs.cache.dir
    with tccount.triton_instrumented(address, str(tmp_path), compiled):
        kernel = _compile_flash(cap)
    ptx = kernel.asm["ptx"].splitlines()
    mmas = [i for i, line in enumerate(ptx) if line.strip().startswith(opcode)]
    assert mmas and compiled and compiled[0].sites == len(mmas), (len(mmas), [c.sites for c in compiled])
    for i in mmas:
        assert f"mov.u64 %ladder_a, {address:#x}; red.global.add.u64 [%ladder_a], %ladder_w;" in ptx[i - 1], ptx[i - 1]
    assert kernel.asm["cubin"], "ptxas produced no binary"
    assert knobs.cache.dir == cache_before and knobs.runtime.add_stages_inspection_hook is None
    assert not knobs.compilation.always_compile
    assert "ladder" not in _compile_flash(cap).asm["ptx"], "a compile after counting still carries the counter"


class _FakeJIT:
    """Stands in for a JITFunction: its kernel cache, and a run that notes which cache it used."""

    def __init__(self):
        self.device_caches = {"usual": True}
        self.seen = []
        self.fn = _FakeJIT  # stands for the Python function, as in a JITFunction

    def create_binder(self):
        return ("binder",)


@pytest.fixture
def cpu_counter(monkeypatch):
    """launch_triton_counted without a GPU: its counter a CPU tensor, synchronize a no-op."""
    import torch

    counter = torch.zeros(2, dtype=torch.int64)   # every MMA's multiply-adds, then those on fp8 operands
    monkeypatch.setattr(tccount, "_triton_counter", lambda: (counter, "/nonexistent"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    return counter


def test_triton_counting_uses_a_cache_of_its_own(cpu_counter):
    counter = cpu_counter
    fake, tally = _FakeJIT(), tccount.Tally()
    usual = fake.device_caches

    def run(self, *args, **kwargs):
        self.seen.append(self.device_caches)
        counter.add_(1000)  # what the instrumented binary's atomics would add
        return args, kwargs

    assert tccount.launch_triton_counted(fake, run, (1, 2), {"grid": (3,)}, tally, "k") == ((1, 2), {"grid": (3,)})
    tccount.launch_triton_counted(fake, run, (), {}, tally, "k")
    assert fake.device_caches is usual, "the usual kernel cache was not put back"
    assert fake.seen[0] is not usual and fake.seen[1] is fake.seen[0], "counted binaries are not kept apart and reused"
    assert tally.macs == {"k": 2000} and not tally.uncounted


def test_triton_counting_falls_back_to_the_original_when_the_copy_cannot_be_built(cpu_counter):
    fake, tally = _FakeJIT(), tccount.Tally()
    usual = fake.device_caches

    def run(self, *args, **kwargs):
        self.seen.append(self.device_caches)
        if self.device_caches is not usual:
            raise RuntimeError("PTX assembly failed\nptxas fatal")
        return "original"

    assert tccount.launch_triton_counted(fake, run, (), {}, tally, "k") == "original"
    assert tally.uncounted == {"k": "RuntimeError: PTX assembly failed"} and tally.macs == {}
    assert fake.device_caches is usual


# 6-causal: the executed tensor-core work of one causal launch
B, H, N, D = ch06.COUNT_SIZE
FULL = 2 * B * H * N * N * D
NEEDED = 2 * B * H * (N * (N + 1) // 2) * D


def _judge(causal, noncausal=FULL, **kw):
    ch06.judge_skipping(_counted({"flash": int(causal)}, **kw), _counted({"flash": int(noncausal)}), ch06.COUNT_SIZE)


# Shares of the whole product measured on an H100 (assets/results/timing-integrity/isolated-grading-h100/J): causal, causal=False.
@pytest.mark.parametrize("causal, noncausal, shown", [
    (0.5078, 1.0, "50.8% of the multiply-adds"),            # 64-row tiles, 4 warps
    (0.5625, 1.0, "56.2% of the multiply-adds"),            # 512-row tiles
    (0.7617, 1.5, "repeats some MMAs across warps"),        # 64-row tiles, 8 warps: every MMA 1.5 times
])
def test_a_causal_launch_that_skips_passes_with_its_share(causal, noncausal, shown, capsys):
    _judge(causal * FULL, noncausal * FULL)
    assert shown in capsys.readouterr().out


@pytest.mark.parametrize("causal, noncausal, shown", [
    (1.0, 1.0, "100% of what your causal=False launch did"),   # ch06/no_skip
    (1.5, 1.5, "100% of what your causal=False launch did"),   # no skip, 8 warps
    (1.0, 2.0, "more than 1.6 times the product"),             # wrong/slowed_noncausal
    (1.0, 1.6, "63% of what your causal=False launch did"),    # slowed just enough to stay under the cap
    (1.0, 5.0, "more than 1.6 times the product"),
    (0.61, 1.0, "61% of what your causal=False launch did"),
])
def test_a_causal_launch_that_computes_the_masked_tiles_fails(causal, noncausal, shown):
    with pytest.raises(CheckFailed, match="6-causal: a causal launch") as info:
        _judge(causal * FULL, noncausal * FULL)
    assert info.value.reason == "not-skipped" and shown in str(info.value), str(info.value)


def test_no_slowed_causal_false_launch_lets_a_full_causal_launch_pass():
    """SKIP_LIMIT * MAX_REPEAT < 1: whatever the causal=False launch does, a causal launch that does
    the whole product (or more) fails."""
    assert ch06.SKIP_LIMIT * ch06.MAX_REPEAT < 1
    for noncausal in (0.5, 1.0, 1.2, 1.6, 1.66, 2.0, 10.0):
        with pytest.raises(CheckFailed):
            _judge(FULL, noncausal * FULL)


def test_a_count_that_could_not_run_scores_by_the_unchecked_policy(monkeypatch):
    monkeypatch.delenv("LADDER_UNCHECKED", raising=False)
    with pytest.raises(CheckFailed) as exc:
        _judge(0, 0, uncounted={"flash": "RuntimeError: no ptxas"})
    assert exc.value.reason == "unchecked" and "no ptxas" in str(exc.value)


@pytest.mark.parametrize("kw, why", [
    ({"unweighed": {"flash": ["tcgen05.mma"]}}, "cannot be counted (tcgen05.mma)"),
    ({}, "only 25% of the multiply-adds a causal launch needs"),
])
def test_a_count_that_cannot_tell_leaves_the_timing_verdict_with_a_note(kw, why, capsys):
    _judge(0 if kw else NEEDED // 4, 0 if kw else FULL, **kw)
    out = capsys.readouterr().out
    assert why in out and "skipping rests on the timing alone" in out, out


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name, tiles", [("correct/ch06_minimal", 64 * 65 // 2), ("ch06/no_skip", 32 * 64)])
def test_gpu_counts_exactly_the_tiles_a_causal_flash_kernel_computes(name, tiles):
    """ch06_minimal: 64 x 64 tiles, query tile i visits key tiles 0..i. no_skip: 128-row query tiles,
    every one of the 64 key tiles. Each tile is 2 * rows * 64 * D multiply-adds (Q K^T and P V)."""
    import torch

    attention = launchers(*name.split("/"), ["attention-solution"])["attention"]
    rows = 64 if "minimal" in name else 128
    gen = torch.Generator(device="cuda").manual_seed(1234)
    q, k, v = (torch.randn(ch06.COUNT_SIZE, generator=gen, device="cuda").half() for _ in range(3))
    out = torch.full_like(q, float("nan"))
    attention(q, k, v, out, True)  # compiled and run once as usual first
    out.fill_(float("nan"))
    with tccount.counting() as tally:
        attention(q, k, v, out, True)
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), ch06.attention_reference(q.double(), k.double(), v.double(), True),
                               rtol=ch06.TOLERANCE[0], atol=ch06.TOLERANCE[1])
    assert sum(tally.macs.values()) == B * H * tiles * 2 * rows * 64 * D, tally
    assert not tally.uncounted and not tally.unweighed
    # The binaries used for timing are the usual ones again: no counter runs outside counting().
    out.fill_(float("nan"))
    before = tccount._TRITON["counter"].item()
    attention(q, k, v, out, True)
    torch.cuda.synchronize()
    assert tccount._TRITON["counter"].item() == before
