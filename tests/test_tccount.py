"""Counting the multiply-adds tensor cores execute (grader.tccount) and chapter 4's verdict on the
count. The PTX is instrumented and assembled with ptxas on the CPU (the dev extra ships one); the
counts themselves need a GPU."""

import pytest

from conftest import HAS_GPU, ROOT
from grader import sass, tccount
from grader.chapters import ch04
from grader.errors import CheckFailed
from grader.source import cuda_sources_in_notebook
from submissions.build import launchers
from submissions.wrong import dead_branch_mma

SOLUTION = ROOT / "solutions/04_tensor_cores/04_tensor_cores.ipynb"
SOURCES = dict(cuda_sources_in_notebook(SOLUTION)[0])
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
    compiled = sass.compile_kernel(source, name, arch)
    inst = tccount.instrument_ptx(compiled.ptx)
    assert inst.sites == sites == compiled.ptx.count("\twmma.mma.sync")
    cubin, refusals = tccount.assemble(inst.ptx, arch)
    assert cubin is not None, refusals
    disassembler = sass.find_disassembler()
    if disassembler is None:
        return
    text = sass._run_disassembler(*disassembler, cubin)
    body = sass.parse_sass(text)[name]
    reds = [i for i in body if " RED" in i or "REDG" in i or " ATOM" in i]
    hmma = [i for i in body if "HMMA" in i]
    assert hmma and len(reds) >= 1


# --------------------------------------------------------------------------- chapter 4's verdict

LISTINGS = [sass.Listing("wmma_gemm", "sm_90", "", ("/*0000*/ HMMA.16816.F32 R0, R4, R8, R0",), "cuobjdump", "", "")]
NEED = ch04.COUNT_SIZE[0] * ch04.COUNT_SIZE[1] * ch04.COUNT_SIZE[2]


def _counted(macs=None, uncounted=None, unweighed=None):
    return {"macs": macs or {}, "uncounted": uncounted or {}, "unweighed": unweighed or {}}


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


def test_a_machine_that_cannot_count_falls_back_to_the_instructions_with_a_note(capsys):
    ch04._judge_count(_counted(uncounted={"wmma_gemm": "CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION"}),
                      {"wmma_gemm"}, LISTINGS, "4")
    out = capsys.readouterr()
    assert "could not count" in out.out and "UNSUPPORTED_PTX_VERSION" in out.out and not out.err


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
    from grader.errors import NoGPUError
    from grader.kernels import CudaKernel, load_kernel

    before = CudaKernel.__call__
    kernel = load_kernel(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm")
    with pytest.raises(NoGPUError, match="cannot run `wmma_gemm`"):
        with tccount.counting() as tally:
            assert CudaKernel.__call__ is not before
            kernel((1,), (32,), ())
    assert CudaKernel.__call__ is before and tally.macs == {}
