"""Chapter 4 (tensor cores): the napkin checks, the tolerance, the SASS/PTX inspection and the
tensor-core check on the CPU; `ladder check` of the solution and the release; the verdicts on a GPU."""

import importlib.util
import json

import pytest
import torch

from conftest import HAS_GPU, ROOT, ladder_check_one
from grader.cuda import sass
from grader.cuda.nvrtc import compile_cuda
from grader.chapters import ch04
from grader.harness.correctness import compare
from grader.errors import CheckFailed, KernelCompileError, LadderError, NotImplementedYet
from grader.cuda.kernels import CudaKernel, load_kernel
from grader.learner.cells import cuda_sources
from submissions.build import build, launchers

SOLUTION = ROOT / "solutions/04_tensor_cores/04_tensor_cores.ipynb"
RELEASE = ROOT / "course/04_tensor_cores/04_tensor_cores.ipynb"
SOURCES = dict(cuda_sources(SOLUTION)[0])
FMA_SRC = SOURCES["FMA_GEMM_SRC"]


@pytest.fixture
def no_disassembler(monkeypatch):
    monkeypatch.setenv("LADDER_NO_DISASSEMBLER", "1")
    sass.find_disassembler.cache_clear()
    yield
    sass.find_disassembler.cache_clear()


# ------------------------------------------------------------------------------ napkin math

def test_flops_napkin_accepts_the_right_answer(capsys):
    ch04.check_napkin_math(lambda m, n, k: 2 * m * n * k, lambda f, t: f / (t * 1e12) * 1e3)
    assert "✓ 4.0" in capsys.readouterr().out


@pytest.mark.parametrize("flops, floor, message", [
    (lambda m, n, k: m * n * k, lambda f, t: f / (t * 1e12) * 1e3, "a multiply-add counts as 2 FLOPs"),
    (lambda m, n, k: 2 * m * n * k, lambda f, t: f / (t * 1e12), "answer in milliseconds"),
    (lambda m, n, k: "2mnk", lambda f, t: 0.0, "should return a number"),
])
def test_flops_napkin_rejects_wrong_answers_with_a_hint(flops, floor, message):
    with pytest.raises(CheckFailed, match=message):
        ch04.check_napkin_math(flops, floor)


def test_intensity_napkin_accepts_right_and_rejects_wrong():
    right_fpb = lambda tm, tn: tm * tn / (tm + tn)  # noqa: E731
    right_bytes = lambda m, n, k, tm, tn: 2 * (m * k * (n // tn) + k * n * (m // tm))  # noqa: E731
    ch04.check_intensity(right_fpb, right_bytes)
    with pytest.raises(CheckFailed, match=r"flops_per_byte\(16, 16\) \(hint.*\) = 16.0, expected 8.0"):
        ch04.check_intensity(lambda tm, tn: 2 * tm * tn / (tm + tn), right_bytes)   # halves, not bytes
    with pytest.raises(CheckFailed, match=r"global_bytes\(4096, 4096, 4096, 16, 16\)"):
        ch04.check_intensity(right_fpb, lambda m, n, k, tm, tn: m * k * (n // tn) + k * n * (m // tm))


def test_napkin_stubs_say_not_written_yet():
    def stub(*args):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="exercise 4.0 is not written yet"):
        ch04.check_napkin_math(stub, stub)
    with pytest.raises(NotImplementedYet, match="exercise 4.1 is not written yet"):
        ch04.check_intensity(stub, stub)


# ------------------------------------------------------------------------------- tolerance

def _accumulate(m, n, k, mode, seed=0):
    """A GEMM of fp16 inputs summed 16 products at a time, as tensor cores do, in `mode`."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).half()
    b = torch.randn(k, n, generator=gen).half()
    exact = a.double() @ b.double()
    acc = torch.zeros(m, n, dtype=torch.float64)
    for k0 in range(0, k, 16):
        step = a[:, k0:k0 + 16].double() @ b[k0:k0 + 16].double()   # exact: 16 exact products
        if mode == "fp16":
            acc = (acc + step.half().double()).half().double()
        else:
            acc = _round32(acc + _round32(step, mode), mode)
    result = acc.float()
    return (result.half().float() if mode == "fp16-out" else result), exact


def _round32(x, mode):
    """Round float64 to fp32: to nearest, or toward zero (tensor cores that truncate)."""
    y = x.float()
    if mode == "trunc":
        over = y.double().abs() > x.abs()
        y = torch.where(over, torch.nextafter(y, torch.zeros_like(y)), y)
    return y.double()


@pytest.mark.parametrize("k", [4096, 256])
def test_tolerance_passes_fp32_accumulation_and_fails_fp16(k):
    """The experiment behind ch04._tolerance: fp32 sums always pass, fp16 sums and outputs fail."""
    size = (32, 32, k)
    rtol, atol = ch04.WMMA_GEMM.tolerance_for(size)
    for mode in ("nearest", "trunc"):
        got, exact = _accumulate(*size, mode)
        compare(got, exact, rtol=rtol, atol=atol, what=f"fp32 accumulation ({mode})")
        assert (got.double() - exact).abs().max() < atol / 4, "the tolerance should leave a wide margin"
    for mode in ("fp16", "fp16-out"):
        got, exact = _accumulate(*size, "nearest" if mode == "fp16-out" else mode)
        if mode == "fp16-out":
            got = got.half().float()
        with pytest.raises(CheckFailed, match="wrong result"):
            compare(got, exact, rtol=rtol, atol=atol, what=mode)


def test_exercise_counts_shapes_and_sizes():
    ex = ch04.WMMA_GEMM
    assert ex.flops((2, 3, 4)) == 48 and ex.bytes_moved((2, 3, 4)) == 2 * (8 + 12) + 4 * 6
    assert ex.ceiling == "fp16_tflops" and ex.speed_size() == (4096, 4096, 4096)
    gen = torch.Generator().manual_seed(1)
    a, b = ex.make_inputs((5, 7, 3), gen, "cpu")
    assert a.shape == (5, 3) and b.shape == (3, 7) and a.dtype == b.dtype == torch.float16
    out = ex.make_output((5, 7, 3), "cpu")
    assert out.shape == (5, 7) and out.dtype == torch.float32
    assert torch.allclose(ex.reference(a.double(), b.double()), a.double() @ b.double())
    sizes = list(ex.visible_sizes) + ch04.HIDDEN_SIZES
    assert any(m % 16 or n % 16 or k % 16 for m, n, k in ex.visible_sizes), "a visible non-multiple of 16"
    assert any(k >= 4096 for _, _, k in ex.visible_sizes), "fp16 accumulation must fail a visible test"
    assert (1, 1, 1) in ch04.HIDDEN_SIZES
    assert any(m % 128 and n % 128 and m != n for m, n, _ in ch04.HIDDEN_SIZES)
    assert any(k % 8 for _, _, k in sizes) and any(n % 8 for _, n, _ in sizes), "the element-by-element path"


# -------------------------------------------------------------------------- SASS and PTX

CUOBJDUMP = """
\tcode for sm_90
\t\tFunction : helper_fn
        /*0000*/                   FFMA R1, R2, R3, R4 ;        /* 0x000 */
\t\tFunction : k
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   LDG.E.128 R4, desc[UR8][R2.64] ;   /* 0x0000 */
                                                                       /* 0x0000 */
        /*0010*/                   HMMA.16816.F32 R8, R4, R6, R8 ;     /* 0x0000 */
        /*0020*/              @!P0 HMMA.16816.F32 R12, R4, R6, R12 ;   /* 0x0000 */
        /*0030*/                   EXIT ;
"""

NVDISASM = """
//--------------------- .text.k                   --------------------------
\t.section\t.text.k,"ax",@progbits
k:
.text.k:
        /*0000*/                   FFMA R1, R2, R3, R4 ;
        /*0010*/                   EXIT ;
"""


def test_parse_sass_reads_both_disassemblers():
    funcs = sass.parse_sass(CUOBJDUMP)
    assert list(funcs) == ["helper_fn", "k"] and len(funcs["k"]) == 4
    assert "@!P0 HMMA.16816.F32 R12, R4, R6, R12" in funcs["k"][2]
    assert sass.parse_sass(NVDISASM) == {"k": ["/*0000*/ FFMA R1, R2, R3, R4", "/*0010*/ EXIT"]}
    listing = sass.Listing("k", "sm_90", "", tuple(funcs["k"]), "cuobjdump", "", "NVRTC")
    assert listing.tensor_core_instructions() == {"HMMA.16816.F32": 2}
    assert listing.count("HMMA") == 2 and listing.count("LDG") == 1 and listing.count("FFMA") == 0


def test_ptx_of_takes_the_kernel_and_the_functions_it_calls():
    ptx = (".visible .entry other(\n)\n{\n\twmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {...};\n}\n"
           ".func  (.param .b32 func_retval0) helper(\n)\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n}\n"
           ".visible .entry mine(\n)\n{\n\tcall.uni (retval0), helper, (param0);\n\tret;\n}\n")
    body, called = sass.ptx_of(ptx, "mine")
    assert called == ["helper"] and "fma.rn.f32" in body and "wmma" not in body
    with pytest.raises(LadderError, match=r"no kernel named `nope` \(kernels found: mine, other\)"):
        sass.ptx_of(ptx, "nope")


def test_solution_ptx_contains_mma_for_sm80_and_sm90():
    for arch in ("sm_80", "sm_90"):
        compiled = compile_cuda(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm", arch)
        ptx, _ = sass.ptx_of(compiled.ptx, "wmma_gemm")
        assert "wmma.mma.sync" in ptx and f".target {arch}" in compiled.ptx
        assert "wmma.mma.sync" in compile_cuda(SOURCES["WMMA_GEMM_ASYNC_SRC"], "wmma_gemm_async", arch).ptx


def test_ptx_fallback_without_a_disassembler(no_disassembler):
    wmma = sass.disassemble(source=SOURCES["WMMA_NAIVE_SRC"], name="wmma_gemm_naive", arch="sm_80")
    fma = sass.disassemble(source=FMA_SRC, name="fma_gemm_naive", arch="sm_80")
    assert wmma.level == fma.level == "PTX" and "no disassembler found" in wmma.note
    assert sum(wmma.tensor_core_instructions().values()) > 0 and wmma.count("wmma.mma") > 0
    assert not fma.tensor_core_instructions() and fma.count("fma.rn.f32") > 0
    assert "wmma.mma" in wmma.grep("wmma.mma") and "..." in wmma.grep("wmma.mma", width=40)


@pytest.mark.skipif(sass.find_disassembler() is None, reason="no cuobjdump or nvdisasm here")
def test_sass_shows_hmma_for_wmma_and_ffma_for_fma():
    for arch in ("sm_80", "sm_90"):
        wmma = sass.disassemble(source=SOURCES["WMMA_GEMM_SRC"], name="wmma_gemm", arch=arch)
        fma = sass.disassemble(source=FMA_SRC, name="fma_gemm_naive", arch=arch)
        assert wmma.level == "SASS" and wmma.count("HMMA.16816.F32") == 32   # 4 x 2 fragments, 2 steps, 2 each
        assert fma.level == "SASS" and fma.count("FFMA") > 0 and not fma.tensor_core_instructions()
        assert wmma.count("LDSM") > 0, "fragments come from shared memory through ldmatrix"


def test_compiling_through_cupys_nvrtc_when_cuda_bindings_is_missing(monkeypatch):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from grader.cuda import nvrtc

    monkeypatch.setattr(nvrtc, "binding", lambda: nvrtc._CupyBinding())
    nvrtc.compile_cuda.cache_clear()
    try:
        compiled = nvrtc.compile_cuda(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm", "sm_80")
        assert compiled.binding.endswith("(CuPy)") and "wmma.mma.sync" in compiled.ptx and compiled.cubin
        with pytest.raises(KernelCompileError, match='kernel line 3: error: identifier "nope" is undefined'):
            nvrtc.compile_cuda('extern "C" __global__ void k(float* o)\n{\n    o[0] = nope;\n}\n', "k", "sm_80")
    finally:
        nvrtc.compile_cuda.cache_clear()


# ---------------------------------------------------------------------- the tensor-core check

def _launcher(name):
    return launchers("ch04", name, ["wmma-solution"])["wmma_gemm"]


def test_tensor_core_check_passes_the_solution_on_a_cpu(capsys):
    listings = ch04.check_tensor_cores(_launcher("correct"))
    assert [l.name for l in listings] == ["wmma_gemm"]
    assert "✓ 4 tensor cores: `wmma_gemm` has" in capsys.readouterr().out


def test_tensor_core_check_fails_an_fma_kernel_with_a_clear_message():
    with pytest.raises(CheckFailed) as info:
        ch04.check_tensor_cores(_launcher("fma_only"))
    msg = str(info.value)
    assert "`fma_gemm` has no tensor-core instructions" in msg and "wmma::mma_sync" in msg
    assert "FFMA" in msg or "fma.rn.f32" in msg


def test_tensor_core_check_inspects_every_launched_kernel_not_the_notebook():
    wmma = load_kernel(SOURCES["WMMA_GEMM_SRC"], "wmma_gemm")
    fma = load_kernel(FMA_SRC, "fma_gemm_naive")

    def both(a, b, out):  # a WMMA kernel for show, the real work on the FMA units
        wmma((1,), (256,), (a, b, out))
        fma((1,), (256,), (a, b, out))

    with pytest.raises(CheckFailed, match=r"1 of the 2 kernels that wmma_gemm launches have no tensor-core"):
        ch04.check_tensor_cores(both)
    assert CudaKernel.__call__ is not None and "record" not in CudaKernel.__call__.__qualname__

    def nothing(a, b, out):
        out.zero_()
    with pytest.raises(CheckFailed, match="without launching a kernel made with load_kernel"):
        ch04.check_tensor_cores(nothing)


def test_tensor_core_check_on_stubs_says_not_written_yet():
    def stub(a, b, out):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="exercise 4 .* is not written yet"):
        ch04.check_tensor_cores(stub)
    stub_kernel = load_kernel('extern "C" __global__ void k(float* o)\n{\n    # YOUR CODE HERE\n'
                              '    raise NotImplementedError()\n}\n', "k")
    with pytest.raises(NotImplementedYet, match="the CUDA kernel `k` is not written yet"):
        ch04.check_tensor_cores(lambda a, b, out: stub_kernel((1,), (1,), (out,)))


def test_a_launcher_that_refuses_some_shapes_is_still_inspected():
    ns = launchers("ch04", "correct", [])
    nb = json.loads(SOLUTION.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"]["nbgrader"]["grade_id"] == "naive-src")
    exec("".join(cell["source"]), ns)   # wmma_gemm_naive refuses shapes that are not multiples of 16
    (listing,) = ch04.check_tensor_cores(ns["wmma_gemm_naive"], verbose=False)
    assert listing.name == "wmma_gemm_naive" and listing.tensor_core_instructions()


def test_every_submission_names_real_cells():
    for name in ("correct", "stub", "global_wmma", "fma_only", "fp16_accum", "serial_loads", "register_prefetch",
                 "wrong"):
        launchers("ch04", name, ["napkin-solution", "intensity-solution", "wmma-solution"])


# ------------------------------------------------------------------------------ ladder check

CPU_CELLS = ("napkin-test", "intensity-test", "wmma-tensor-cores", "diagnose-test")
GPU_CELLS = ("wmma-visible", "wmma-hidden", "wmma-speed", "mma-visible", "mma-hidden")


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["04_tensor_cores"], indirect=True)
def test_solution_on_a_cpu_earns_the_napkin_and_tensor_core_points(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid in CPU_CELLS:
        assert cells[gid]["outcome"] == "pass", cells[gid]
    for gid in GPU_CELLS:
        err = cells[gid]["error"]
        assert cells[gid]["outcome"] == "fail" and err["ename"] == "NoGPUError", cells[gid]
        assert "no GPU found" in err["evalue"] and "compile for sm_80 and sm_90" in err["evalue"]
        assert "Traceback" not in err["evalue"]
    assert nb["score"] == 4 and nb["max_score"] == 12   # 10, and exercise 4c's 2 optional points


@pytest.mark.slow
def test_released_notebook_fails_every_graded_cell_with_not_implemented():
    code, nb, cells = ladder_check_one(RELEASE)
    assert code == 1 and nb["score"] == 0 and set(cells) == set(CPU_CELLS + GPU_CELLS)
    for c in cells.values():
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU expectations")
def test_fma_only_submission_fails_the_tensor_core_cell_on_a_cpu(tmp_path):
    _, nb, cells = ladder_check_one(build("ch04", "04_tensor_cores", "fma_only", tmp_path / "fma_only.ipynb"))
    tc = cells["wmma-tensor-cores"]
    assert tc["outcome"] == "fail" and tc["error"]["ename"] == "CheckFailed"
    assert "`fma_gemm` has no tensor-core instructions" in tc["error"]["evalue"]
    assert cells["napkin-test"]["passed"] and cells["intensity-test"]["passed"] and nb["score"] == 3


# --------------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert all(c["outcome"] == "pass" for c in cells.values()) and nb["score"] == 12


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("name", ["global_wmma", "serial_loads"])
def test_gpu_slow_rungs_are_correct_but_below_the_bar(tmp_path, name):
    _, _, cells = ladder_check_one(build("ch04", "04_tensor_cores", name, tmp_path / f"{name}.ipynb"))
    for gid in ("wmma-tensor-cores", "wmma-visible", "wmma-hidden"):
        assert cells[gid]["passed"], cells[gid]
    speed = cells["wmma-speed"]
    assert not speed["passed"] and "below the bar" in speed["error"]["evalue"], speed


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_fma_kernel_is_correct_but_fails_both_tensor_core_gates(tmp_path):
    _, _, cells = ladder_check_one(build("ch04", "04_tensor_cores", "fma_only", tmp_path / "fma_only.ipynb"))
    assert cells["wmma-visible"]["passed"] and cells["wmma-hidden"]["passed"]
    for gid in ("wmma-tensor-cores", "wmma-speed"):
        assert not cells[gid]["passed"] and "no tensor-core instructions" in cells[gid]["error"]["evalue"]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_fp16_accumulation_fails_on_the_tolerance(tmp_path):
    _, _, cells = ladder_check_one(build("ch04", "04_tensor_cores", "fp16_accum", tmp_path / "fp16.ipynb"))
    # The instrumented run matches the kernel's own output, fp16 sums and all: the tensor cores did the work.
    assert cells["wmma-tensor-cores"]["passed"], cells["wmma-tensor-cores"]
    for gid in ("wmma-visible", "wmma-hidden", "wmma-speed"):   # exercise 4c is the solution's here
        assert not cells[gid]["passed"] and "wrong result" in cells[gid]["error"]["evalue"], cells[gid]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_wrong_submission_scores_what_its_docstring_promises(tmp_path):
    _, nb, cells = ladder_check_one(build("ch04", "04_tensor_cores", "wrong", tmp_path / "wrong.ipynb"))
    assert not cells["napkin-test"]["passed"] and cells["intensity-test"]["passed"]
    assert "never written" in cells["wmma-visible"]["error"]["evalue"]
    # `ladder check` runs the notebook as released, whose hidden cell keeps only its visible shapes
    # (1x1x1 and 17x33x9, inside the one block the rounded-down grid still launches): it passes here.
    # nbgrader restores the hidden shapes when grading, and they fail (checked below).
    assert cells["wmma-hidden"]["passed"] and cells["wmma-speed"]["passed"]
    assert nb["score"] == 9   # the diagnosis and exercise 4c's two optional points are the solution's
    wmma_gemm = launchers("ch04", "wrong", ["wmma-solution"])["wmma_gemm"]
    with pytest.raises(CheckFailed, match="wrong result"):
        ch04.check_wmma_gemm(wmma_gemm, sizes=ch04.HIDDEN_SIZES, trials=1)


# ------------------------------------------------------------------ exercise 4c: mma.sync (CPU)
#
# The kernel runs on a GPU only where one is; here its index logic is run in Python, step by step as
# the CUDA source writes it, against NumPy emulations of ldmatrix and mma.sync written from the PTX
# ISA's fragment tables. MMA_SNIPPETS ties the two: every index expression the emulation copies must
# appear verbatim in the source, so an edit to one without the other fails here.

MMA_SRC = SOURCES["GEMM_MMA_SRC"]
MMA_SNIPPETS = (
    "extern __shared__ __align__(128) half smem[];",
    "half* Bs = smem + STAGES * A_STAGE;",
    "#define SMEM_BYTES (STAGES * (A_STAGE + B_STAGE) * 2)",
    "auto swz_a = [](int r, int ch) { return A_CHUNKS >= 8 ? (ch ^ (r & 7)) : (ch ^ ((r >> 1) & 3)); };",
    "auto swz_b = [](int r, int ch) { return ch ^ (r & 7); };",
    "const int id = blockIdx.y * gridDim.x + blockIdx.x;",
    "const int per_group = GROUP_M * gridDim.x;",
    "const int first_m = (id / per_group) * GROUP_M;",
    "const int rows_m = min((int)gridDim.y - first_m, GROUP_M);",
    "const int block_m = (first_m + (id % per_group) % rows_m) * BM;",
    "const int block_n = ((id % per_group) / rows_m) * BN;",
    "const bool a_vec = (K % 8) == 0 && ((size_t)a % 16) == 0;",
    "const bool b_vec = (N % 8) == 0 && ((size_t)b % 16) == 0;",
    "const bool interior = a_vec && b_vec && block_m + BM <= M && block_n + BN <= N;",
    "if (interior && k0 + BK <= K) {",
    "for (int p = 0; p < BM * A_CHUNKS / THREADS; ++p) {",
    "const int i = tid + p * THREADS, r = i / A_CHUNKS, ch = i % A_CHUNKS;",
    "cp_async16(as0 + (stage * A_STAGE + (r * A_CHUNKS + swz_a(r, ch)) * 8) * 2,",
    "a + (size_t)(block_m + r) * K + k0 + ch * 8);",
    "for (int p = 0; p < BK * B_CHUNKS / THREADS; ++p) {",
    "const int i = tid + p * THREADS, r = i / B_CHUNKS, ch = i % B_CHUNKS;",
    "cp_async16(bs0 + (stage * B_STAGE + (r * B_CHUNKS + swz_b(r, ch)) * 8) * 2,",
    "b + (size_t)(k0 + r) * N + block_n + ch * 8);",
    "const int gr = block_m + r, gc = k0 + ch * 8;",
    "half* dst = &As[stage * A_STAGE + (r * A_CHUNKS + swz_a(r, ch)) * 8];",
    "if (a_vec && gr < M && gc + 8 <= K) {",
    "const int gr = k0 + r, gc = block_n + ch * 8;",
    "half* dst = &Bs[stage * B_STAGE + (r * B_CHUNKS + swz_b(r, ch)) * 8];",
    "if (b_vec && gr < K && gc + 8 <= N) {",
    "if (s < slices) load_slice(s, s * BK);",
    "cp_async_wait<STAGES - 1>();",
    "load_fragments(0, 0, 0);",
    "const int stage = t % STAGES;",
    "load_fragments((kk + 1) % 2, stage, kk + 1);",
    "} else if (t + 1 < slices) {",
    "cp_async_wait<STAGES - 2>();",
    "const int next = t + STAGES;",
    "if (next < slices) load_slice(stage, next * BK);",
    "load_fragments(0, (t + 1) % STAGES, 0);",
    "mma_16816(acc[i][j], af[kk % 2][i], bf[kk % 2][j]);",
    "const unsigned as = as0 + stage * (A_STAGE * 2), bs = bs0 + stage * (B_STAGE * 2);",
    "const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;",
    "const int r = warp_m * WM + i * 16 + (lane % 16);",
    "const int ch = kk * 2 + lane / 16;",
    "ldmatrix_x4(af[buf][i], as + (r * A_CHUNKS + swz_a(r, ch)) * 16);",
    "const int r = kk * 16 + (lane % 16);",
    "const int ch = (warp_n * WN + j * 16) / 8 + lane / 16;",
    "ldmatrix_x4_trans(q, bs + (r * B_CHUNKS + swz_b(r, ch)) * 16);",
    "bf[buf][2 * j][0] = q[0]; bf[buf][2 * j][1] = q[1];",
    "bf[buf][2 * j + 1][0] = q[2]; bf[buf][2 * j + 1][1] = q[3];",
    "const int g = lane / 4, tig = lane % 4;",
    "const int col = block_n + warp_n * WN + j * 8 + tig * 2;",
    "const int row = block_m + warp_m * WM + i * 16 + g + 8 * h;",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "cp.async.cg.shared.global [%0], [%1], 16;",
    "__launch_bounds__(THREADS, MIN_BLOCKS)",
    # BRANCH_FREE (1 in the shipped kernel; the GPU script times 0 too)
    "constexpr int A_PASS = THREADS / A_CHUNKS, B_PASS = THREADS / B_CHUNKS;",
    "cp.async.cg.shared.global [%0], [%1], 16, z;",
    "const int tid = BRANCH_FREE ? thread_index_here() : (int)threadIdx.x;",
    "const int r = warp_m * WM + (lane % 16);",
    "a_frag[kk] = (r * A_CHUNKS + swz_a(r, kk * 2 + lane / 16)) * 16;",
    "const int r = lane % 16, ch = (warp_n * WN + j * 16) / 8 + lane / 16;",
    "b_frag[j] = (r * B_CHUNKS + swz_b(r, ch)) * 16;",
    "ldmatrix_x4(af[buf][i], as + a_frag[kk] + i * 16 * BK * 2);",
    "ldmatrix_x4_trans(q, bs + b_frag[j] + kk * 16 * BN * 2);",
    "if (BRANCH_FREE && interior) {",
    "const int a_r = tid / A_CHUNKS, a_ch = tid % A_CHUNKS, b_r = tid / B_CHUNKS, b_ch = tid % B_CHUNKS;",
    "const unsigned a_dst = as0 + (a_r * A_CHUNKS + swz_a(a_r, a_ch)) * 16;",
    "const unsigned b_dst = bs0 + (b_r * B_CHUNKS + swz_b(b_r, b_ch)) * 16;",
    "const half* a_src = a + (size_t)(block_m + a_r) * K + a_ch * 8;",
    "const half* b_src = b + (size_t)b_r * N + block_n + b_ch * 8;",
    "int k_next = 0;",
    "const bool zeros = k_next + a_ch * 8 >= K;",
    "cp_async16_or_zeros(a_dst + (stage * A_STAGE + p * A_PASS * BK) * 2,",
    "zeros ? a : a_src + (size_t)p * A_PASS * K, zeros);",
    "const bool zeros = k_next + b_r + p * B_PASS >= K;",
    "cp_async16_or_zeros(b_dst + (stage * B_STAGE + p * B_PASS * BN) * 2,",
    "zeros ? b : b_src + (size_t)p * B_PASS * N, zeros);",
    "a_src += BK;",
    "b_src += (size_t)BK * N;",
    "k_next += BK;",
    "copy_next(s);",
    "copy_next(stage);",
)
def _gpu_script_variants() -> dict:
    """The variants the GPU script tries (assets/results/calibration/top-rungs/ch04_gpu.py's VARIANTS), as #define
    changes: the script's own list, so that what is compiled and emulated here is what the GPU times."""
    spec = importlib.util.spec_from_file_location("ch04_gpu", ROOT / "assets/results/calibration/top-rungs/ch04_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.VARIANTS


MMA_VARIANTS = _gpu_script_variants()
SHIPPED = next(iter(MMA_VARIANTS))   # the first variant is what the notebook ships (no #define changed)


def _mma_config(src: str = MMA_SRC, **changes) -> dict:
    """The tile constants of GEMM_MMA_SRC (with `changes` applied as the GPU script's variants do)."""
    import re
    names = ("BM", "BN", "BK", "STAGES", "WARPS_M", "WARPS_N", "MIN_BLOCKS", "GROUP_M", "BRANCH_FREE")
    cfg = {k: int(v) for k, v in re.findall(r"^#define (\w+) (\d+)\b", src, re.M) if k in names}
    assert set(cfg) == set(names), cfg
    cfg.update(changes)
    cfg["THREADS"] = 32 * cfg["WARPS_M"] * cfg["WARPS_N"]
    cfg["WM"], cfg["WN"] = cfg["BM"] // cfg["WARPS_M"], cfg["BN"] // cfg["WARPS_N"]
    cfg["MT"], cfg["NT"] = cfg["WM"] // 16, cfg["WN"] // 8
    cfg["KSTEPS"] = cfg["BK"] // 16
    cfg["A_CHUNKS"], cfg["B_CHUNKS"] = cfg["BK"] // 8, cfg["BN"] // 8
    cfg["A_STAGE"], cfg["B_STAGE"] = cfg["BM"] * cfg["BK"], cfg["BK"] * cfg["BN"]
    cfg["SMEM_BYTES"] = cfg["STAGES"] * (cfg["A_STAGE"] + cfg["B_STAGE"]) * 2
    cfg["A_PASS"], cfg["B_PASS"] = cfg["THREADS"] // cfg["A_CHUNKS"], cfg["THREADS"] // cfg["B_CHUNKS"]
    return cfg


def _swz_a(r, ch, cfg):
    return ch ^ (r & 7) if cfg["A_CHUNKS"] >= 8 else ch ^ ((r >> 1) & 3)


def _swz_b(r, ch):
    return ch ^ (r & 7)


def _block_origin(bx, by, grid_x, grid_y, cfg):
    """(block_m, block_n) of block (blockIdx.x, blockIdx.y): the kernel's launch-order remapping."""
    bid = by * grid_x + bx
    per_group = cfg["GROUP_M"] * grid_x
    first_m = (bid // per_group) * cfg["GROUP_M"]
    rows_m = min(grid_y - first_m, cfg["GROUP_M"])
    return (first_m + (bid % per_group) % rows_m) * cfg["BM"], ((bid % per_group) // rows_m) * cfg["BN"]


def _ldmatrix_x4(mem, addrs, trans):
    """PTX ldmatrix .m8n8.x4 .b16 on `mem` (halves): lanes 8m..8m+7 give the byte addresses of rows 0-7
    of matrix m; lane l receives in register m row l/4, columns 2(l%4), 2(l%4)+1 of matrix m (with
    .trans, of its transpose). Returns (32 lanes, 4 registers, 2 halves); every phase of 8 rows must
    be conflict-free (8 distinct 16-byte bank groups)."""
    import numpy as np
    addrs = np.asarray(addrs)
    assert (addrs % 16 == 0).all(), "ldmatrix rows must be 16-byte aligned"
    for m in range(4):
        groups = {int(x) for x in (addrs[8 * m: 8 * m + 8] // 16) % 8}
        assert len(groups) == 8, f"ldmatrix phase {m}: rows hit bank groups {sorted(groups)}: a bank conflict"
    rows = mem[(addrs // 2)[:, None] + np.arange(8)]          # (32 rows, 8 halves): row r of matrix r // 8
    mats = rows.reshape(4, 8, 8)
    if trans:
        mats = mats.transpose(0, 2, 1)
    lane = np.arange(32)
    # out[lane, m, e] = mats[m, lane // 4, 2 (lane % 4) + e]
    return mats[:, (lane // 4)[:, None], (2 * (lane % 4))[:, None] + np.arange(2)].transpose(1, 0, 2)


# The PTX ISA's fragment tables for mma.m16n8k16 (groupID g = lane >> 2, threadID_in_group t = lane % 4),
# as index arrays: A's element a_i of lane l sits at row g (i < 2 or 4 <= i < 6) else g + 8, column
# 2t + (i & 1) (+ 8 for i >= 4); B's b_i at row 2t + (i & 1) (+ 8 for i >= 2), column g; C's c_i at row
# g (+ 8 for i >= 2), column 2t + (i & 1).
def _fragment_tables():
    import numpy as np
    lane = np.arange(32)[:, None]
    g, t = lane >> 2, lane % 4
    i8, i4 = np.arange(8)[None, :], np.arange(4)[None, :]
    a_row = np.where((i8 < 2) | ((i8 >= 4) & (i8 < 6)), g, g + 8)
    a_col = 2 * t + (i8 & 1) + np.where(i8 >= 4, 8, 0)
    b_row = 2 * t + (i4 & 1) + np.where(i4 >= 2, 8, 0)
    b_col = np.broadcast_to(g, (32, 4))
    c_row = g + np.where(i4 >= 2, 8, 0)
    c_col = 2 * t + (i4 & 1)
    return a_row, a_col, b_row, b_col, c_row, c_col


_FRAGMENTS = _fragment_tables()


def _mma_16816(acc, a_regs, b_regs):
    """PTX mma.m16n8k16.row.col f32.f16.f16.f32 from the fragment tables: acc (32, 4) += the lanes'
    C elements of A @ B. a_regs (32, 4, 2), b_regs (32, 2, 2): registers of two halves each, a_i in
    register i // 2, half i % 2."""
    import numpy as np
    a_row, a_col, b_row, b_col, c_row, c_col = _FRAGMENTS
    A, B = np.full((16, 16), np.nan), np.full((16, 8), np.nan)
    A[a_row, a_col] = a_regs.reshape(32, 8)
    B[b_row, b_col] = b_regs.reshape(32, 4)
    assert not np.isnan(A).any() and not np.isnan(B).any(), "a fragment element was never filled"
    acc += (A @ B)[c_row, c_col]


def _emulate_gemm_mma(a, b, cfg, a_aligned=True, b_aligned=True, c_aligned=True):
    """Run gemm_mma's index logic (launch order, producer with its fast and slow paths, pipeline,
    register double buffering, ldmatrix addresses, fragments, epilogue) for every block and warp, in
    float64. `*_aligned`: whether the kernel would find that pointer 16-byte (c: 8-byte) aligned."""
    import numpy as np
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK, S = cfg["BM"], cfg["BN"], cfg["BK"], cfg["STAGES"]
    AC, BC, T = cfg["A_CHUNKS"], cfg["B_CHUNKS"], cfg["THREADS"]
    assert cfg["KSTEPS"] % 2 == 0, "two register buffers alternate: KSTEPS must be even"
    out = np.full((M, N), np.nan)
    slices = (K + BK - 1) // BK
    grid_x, grid_y = (N + BN - 1) // BN, (M + BM - 1) // BM
    a_vec = K % 8 == 0 and a_aligned
    b_vec = N % 8 == 0 and b_aligned
    c_vec = N % 2 == 0 and c_aligned
    origins, fast_slices, branch_free_blocks = [], 0, 0
    for by in range(grid_y):
        for bx in range(grid_x):
            block_m, block_n = _block_origin(bx, by, grid_x, grid_y, cfg)
            assert 0 <= block_m < M and 0 <= block_n < N, (bx, by, block_m, block_n)
            origins.append((block_m, block_n))
            interior = a_vec and b_vec and block_m + BM <= M and block_n + BN <= N
            # The stages in shared memory, in halves (NaN: never written).
            As, Bs = np.full((S, BM * BK), np.nan), np.full((S, BK * BN), np.nan)

            def load_slice(stage, k0):
                nonlocal fast_slices
                fast = interior and k0 + BK <= K
                fast_slices += fast
                for tid in range(T):
                    for p in range(BM * AC // T):
                        i = tid + p * T
                        r, ch = i // AC, i % AC
                        gr, gc = block_m + r, k0 + ch * 8
                        base = (r * AC + _swz_a(r, ch, cfg)) * 8
                        if fast:   # the cp.async-only path reads 8 halves with no test: they must exist
                            assert gr < M and gc + 8 <= K and a_vec, ("fast path out of A", gr, gc)
                        As[stage, base: base + 8] = [a[gr, gc + e] if gr < M and gc + e < K else 0.0 for e in range(8)]
                    for p in range(BK * BC // T):
                        i = tid + p * T
                        r, ch = i // BC, i % BC
                        gr, gc = k0 + r, block_n + ch * 8
                        base = (r * BC + _swz_b(r, ch)) * 8
                        if fast:
                            assert gr < K and gc + 8 <= N and b_vec, ("fast path out of B", gr, gc)
                        Bs[stage, base: base + 8] = [b[gr, gc + e] if gr < K and gc + e < N else 0.0 for e in range(8)]

            warps = T // 32
            acc = np.zeros((warps, 32, cfg["MT"], cfg["NT"], 4))
            af = np.full((warps, 2, cfg["MT"], 32, 4, 2), np.nan)
            bf = np.full((warps, 2, cfg["NT"], 32, 2, 2), np.nan)

            def load_fragments(buf, stage, kk):
                for warp in range(warps):
                    warp_m, warp_n = warp // cfg["WARPS_N"], warp % cfg["WARPS_N"]
                    for i in range(cfg["MT"]):
                        addrs = []
                        for lane in range(32):
                            if cfg["BRANCH_FREE"]:   # a_frag[kk] + i * 16 * BK * 2
                                r = warp_m * cfg["WM"] + (lane % 16)
                                addrs.append((r * AC + _swz_a(r, kk * 2 + lane // 16, cfg)) * 16 + i * 16 * BK * 2)
                                continue
                            r = warp_m * cfg["WM"] + i * 16 + (lane % 16)
                            ch = kk * 2 + lane // 16
                            addrs.append((r * AC + _swz_a(r, ch, cfg)) * 16)
                        af[warp, buf, i] = _ldmatrix_x4(As[stage], addrs, trans=False)
                    for j in range(cfg["NT"] // 2):
                        addrs = []
                        for lane in range(32):
                            if cfg["BRANCH_FREE"]:   # b_frag[j] + kk * 16 * BN * 2
                                r, ch = lane % 16, (warp_n * cfg["WN"] + j * 16) // 8 + lane // 16
                                addrs.append((r * BC + _swz_b(r, ch)) * 16 + kk * 16 * BN * 2)
                                continue
                            r = kk * 16 + (lane % 16)
                            ch = (warp_n * cfg["WN"] + j * 16) // 8 + lane // 16
                            addrs.append((r * BC + _swz_b(r, ch)) * 16)
                        q = _ldmatrix_x4(Bs[stage], addrs, trans=True)
                        bf[warp, buf, 2 * j], bf[warp, buf, 2 * j + 1] = q[:, 0:2], q[:, 2:4]

            if cfg["BRANCH_FREE"] and interior:
                branch_free_blocks += 1
                # Each thread's two pointers (element offsets into a and b) and shared-memory addresses
                # (bytes from the stage ring's start); copy_next moves them on a slice at a time.
                a_ptr = [(block_m + tid // AC) * K + (tid % AC) * 8 for tid in range(T)]
                b_ptr = [(tid // BC) * N + block_n + (tid % BC) * 8 for tid in range(T)]
                a_dst = [((tid // AC) * AC + _swz_a(tid // AC, tid % AC, cfg)) * 16 for tid in range(T)]
                b_dst = [((tid // BC) * BC + _swz_b(tid // BC, tid % BC)) * 16 for tid in range(T)]
                k_next = 0

                def copy_next(stage):
                    nonlocal k_next, fast_slices
                    fast_slices += k_next + BK <= K
                    As[stage], Bs[stage] = np.nan, np.nan   # every chunk of the stage is written below
                    for mem, flat, src_of, rows, ld, chunks in ((As, a.ravel(), a_ptr, cfg["A_PASS"], K, BM * AC // T),
                                                                (Bs, b.ravel(), b_ptr, cfg["B_PASS"], N, BK * BC // T)):
                        ring = mem.reshape(-1)           # the stages, one after the other, as in memory
                        stage_halves = mem.shape[1]
                        for tid in range(T):
                            for p in range(chunks):
                                if mem is As:
                                    zeros = k_next + (tid % AC) * 8 >= K
                                    dst = a_dst[tid] + (stage * cfg["A_STAGE"] + p * rows * BK) * 2
                                else:
                                    zeros = k_next + tid // BC + p * rows >= K
                                    dst = b_dst[tid] + (stage * cfg["B_STAGE"] + p * rows * BN) * 2
                                assert dst % 16 == 0 and dst // 2 // stage_halves == stage, ("cp.async dst", dst)
                                src = 0 if zeros else src_of[tid] + p * rows * ld
                                row, col = divmod(src, ld)
                                # what cp.async may read (ignored or not): 8 halves inside one row of the matrix
                                assert 0 <= src and row < flat.size // ld and col + 8 <= ld, ("source outside", src)
                                ring[dst // 2: dst // 2 + 8] = 0.0 if zeros else flat[src: src + 8]
                    for tid in range(T):
                        a_ptr[tid] += BK
                        b_ptr[tid] += BK * N
                    k_next += BK

                def refill(t, stage):
                    # the barrier, after every slice, the last one too: slice t is in registers, and
                    # its buffer takes slice t + S (zeros past the end); the next fragments are loaded
                    assert stage != (t + 1) % S, "the refill must not overwrite the next slice"
                    copy_next(stage)
                    return True

                for s in range(S):                   # prologue: slices 0 .. S-1 (zeros past the end)
                    copy_next(s)
            else:
                def refill(t, stage):
                    if t + 1 >= slices:
                        return False
                    # the barrier: slice t is wholly in registers; its buffer takes slice t + S
                    nxt = t + S
                    if nxt < slices:
                        assert stage != (t + 1) % S, "the refill must not overwrite the next slice"
                        As[stage], Bs[stage] = np.nan, np.nan   # what was there is gone
                        load_slice(stage, nxt * BK)
                    return True

                for s in range(S):                       # prologue: slices 0 .. S-1
                    if s < slices:
                        load_slice(s, s * BK)
            load_fragments(0, 0, 0)
            for t in range(slices):
                stage = t % S
                for kk in range(cfg["KSTEPS"]):
                    if kk + 1 < cfg["KSTEPS"]:
                        load_fragments((kk + 1) % 2, stage, kk + 1)
                    elif refill(t, stage):
                        load_fragments(0, (t + 1) % S, 0)
                    for warp in range(warps):
                        for i in range(cfg["MT"]):
                            for j in range(cfg["NT"]):
                                _mma_16816(acc[warp, :, i, j], af[warp, kk % 2, i], bf[warp, kk % 2, j])
            for warp in range(warps):
                warp_m, warp_n = warp // cfg["WARPS_N"], warp % cfg["WARPS_N"]
                for lane in range(32):
                    g, tig = lane // 4, lane % 4
                    for i in range(cfg["MT"]):
                        for j in range(cfg["NT"]):
                            col = block_n + warp_n * cfg["WN"] + j * 8 + tig * 2
                            for h in range(2):
                                row = block_m + warp_m * cfg["WM"] + i * 16 + g + 8 * h
                                if row >= M:
                                    continue
                                for e in range(2):
                                    if col + e < N:
                                        assert np.isnan(out[row, col + e]), f"({row}, {col + e}) written twice"
                                        out[row, col + e] = acc[warp, lane, i, j, 2 * h + e]
                                if c_vec and col + 1 < N:
                                    assert (row * N + col) % 2 == 0, "a float2 store must be 8-byte aligned"
    assert len(set(origins)) == grid_x * grid_y, "two blocks got the same tile"
    _emulate_gemm_mma.fast_slices = fast_slices
    _emulate_gemm_mma.branch_free_blocks = branch_free_blocks
    return out


def test_gemm_mma_source_holds_every_index_expression_the_emulation_copies():
    missing = [s for s in MMA_SNIPPETS if s not in MMA_SRC]
    assert not missing, missing


def _emulated_case(cfg, m, n, k, **aligned):
    """Emulate at m x n x k against float64 a @ b; check that the fast path ran exactly where it may:
    every full slice of every interior block, when A and B are 16-byte aligned row by row."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    got = _emulate_gemm_mma(a, b, cfg, **aligned)
    assert not np.isnan(got).any(), "some outputs were never written"
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)
    vec = k % 8 == 0 and n % 8 == 0 and aligned.get("a_aligned", True) and aligned.get("b_aligned", True)
    expected = (m // cfg["BM"]) * (n // cfg["BN"]) * (k // cfg["BK"]) if vec else 0
    assert _emulate_gemm_mma.fast_slices == expected, (_emulate_gemm_mma.fast_slices, expected)
    interior = (m // cfg["BM"]) * (n // cfg["BN"]) if vec else 0
    assert _emulate_gemm_mma.branch_free_blocks == (interior if cfg["BRANCH_FREE"] else 0)
    return expected


@pytest.mark.parametrize("name", list(MMA_VARIANTS))
def test_gemm_mma_emulated_in_numpy_matches_a_at_b(name):
    """Fragments, ldmatrix addresses (conflict-free, checked inside), swizzle, launch order, producer
    (fast path on interior blocks, checked to stay inside), pipeline and epilogue, emulated for every
    block and warp: 2 x 2 blocks (some interior), 4 slices, ragged edges in M and N, K a multiple of 8
    with a partial last slice."""
    cfg = _mma_config(**MMA_VARIANTS[name])
    fast = _emulated_case(cfg, cfg["BM"] + 24, cfg["BN"] + 8, 3 * cfg["BK"] + 8)
    assert fast == 3, "the one interior block takes the fast path for its 3 full slices"


@pytest.mark.parametrize("m, n, k, aligned", [
    (1, 1, 1, {}), (17, 33, 9, {}), (40, 24, 40, {"a_aligned": False}), (150, 136, 105, {}),
    (136, 264, 40, {"c_aligned": False}), (256, 264, 64, {"b_aligned": False}), (256, 520, 72, {})])
@pytest.mark.parametrize("changes", [{}, {"BRANCH_FREE": 0}, {"BRANCH_FREE": 1, "BK": 64, "STAGES": 3}],
                         ids=["shipped", "without-branch-free", "branch-free-bk64"])
def test_gemm_mma_emulated_on_awkward_shapes(m, n, k, aligned, changes):
    """The shipped tile (and the branch-free loop) at shapes with K not a multiple of 8, unaligned pointers
    (no fast path), a single element, a single block, and 2 x 2 interior blocks; K = 72 and 40 end in a
    partial slice, which the branch-free loop zero-fills past K (and K = 40 < BK = 64, one slice only)."""
    _emulated_case(_mma_config(**changes), m, n, k, **aligned)


def _branch_free(name: str) -> bool:
    """Whether the variant `name` runs the branch-free main loop (the shipped kernel's #define, or its change)."""
    return bool(_mma_config(**MMA_VARIANTS[name])["BRANCH_FREE"])


@pytest.mark.parametrize("name", [n for n in MMA_VARIANTS if _branch_free(n)])
def test_branch_free_addresses_are_the_shipped_loops(name):
    """BRANCH_FREE works the addresses out once; they must be the ones the shipped loop computes each time:
    every warp's ldmatrix rows (each tile, each 16-deep step) and every thread's copies of a full slice."""
    cfg = _mma_config(**MMA_VARIANTS[name])
    AC, BC, BK, BN, T = cfg["A_CHUNKS"], cfg["B_CHUNKS"], cfg["BK"], cfg["BN"], cfg["THREADS"]
    for warp in range(T // 32):
        warp_m, warp_n = warp // cfg["WARPS_N"], warp % cfg["WARPS_N"]
        for lane in range(32):
            for kk in range(cfg["KSTEPS"]):
                r0 = warp_m * cfg["WM"] + (lane % 16)
                a_frag = (r0 * AC + _swz_a(r0, kk * 2 + lane // 16, cfg)) * 16
                for i in range(cfg["MT"]):
                    r = warp_m * cfg["WM"] + i * 16 + (lane % 16)
                    assert a_frag + i * 16 * BK * 2 == (r * AC + _swz_a(r, kk * 2 + lane // 16, cfg)) * 16
                for j in range(cfg["NT"] // 2):
                    ch = (warp_n * cfg["WN"] + j * 16) // 8 + lane // 16
                    b_frag = ((lane % 16) * BC + _swz_b(lane % 16, ch)) * 16
                    r = kk * 16 + (lane % 16)
                    assert b_frag + kk * 16 * BN * 2 == (r * BC + _swz_b(r, ch)) * 16
    N, K, block_m, block_n, k0 = 4 * BN, 8 * BK, cfg["BM"], 2 * BN, 3 * BK
    for tid in range(T):
        a_r, a_ch, b_r, b_ch = tid // AC, tid % AC, tid // BC, tid % BC
        for p in range(cfg["BM"] * AC // T):   # (shared-memory byte, element of a) per chunk, both ways
            i = tid + p * T
            r, ch = i // AC, i % AC
            new = ((a_r * AC + _swz_a(a_r, a_ch, cfg)) * 16 + p * cfg["A_PASS"] * BK * 2,
                   (block_m + a_r) * K + a_ch * 8 + p * cfg["A_PASS"] * K + k0)
            assert new == ((r * AC + _swz_a(r, ch, cfg)) * 8 * 2, (block_m + r) * K + k0 + ch * 8)
        for p in range(BK * BC // T):
            i = tid + p * T
            r, ch = i // BC, i % BC
            new = ((b_r * BC + _swz_b(b_r, b_ch)) * 16 + p * cfg["B_PASS"] * BN * 2,
                   b_r * N + block_n + b_ch * 8 + k0 * N + p * cfg["B_PASS"] * N)
            assert new == ((r * BC + _swz_b(r, ch)) * 8 * 2, (k0 + r) * N + block_n + ch * 8)


def test_branch_free_loop_interleaves_copies_with_mmas_in_the_sass():
    """What BRANCH_FREE is for: in the SASS for sm_90, the main loop's predicated copies (LDGSTS with the
    ignore-src predicate) and its barrier sit between MMAs of the same slice, not in a block of their own."""
    if sass.find_disassembler() is None:
        pytest.skip("no cuobjdump or nvdisasm here")
    import re
    name = SHIPPED
    assert _branch_free(name)
    src = MMA_SRC
    for key, value in MMA_VARIANTS[name].items():
        src = re.sub(rf"^#define {key} \d+\b", f"#define {key} {value}", src, flags=re.M)
    lines = sass.disassemble(source=src, name="gemm_mma", arch="sm_90").instructions
    copies = [i for i, l in enumerate(lines) if "LDGSTS" in l and re.search(r",\s*!?P\d\s*$", l)]
    assert copies, "no predicated (ignore-src) copies in the SASS"
    hmma = [i for i, l in enumerate(lines) if "HMMA.16816.F32" in l]
    assert any(copies[0] < i < copies[-1] for i in hmma), "the copies are not interleaved with the MMAs"
    bar = max(i for i, l in enumerate(lines) if "BAR.SYNC" in l and i < copies[0])
    assert any(bar < i < copies[0] for i in hmma), "after the barrier, the MMAs wait for the copies to issue"


def test_gemm_mma_emulation_catches_a_wrong_fragment_layout(monkeypatch):
    """The emulation can fail: B's k rows 2t and 2t + 1 swapped in the fragment table give wrong sums."""
    import sys
    import numpy as np
    a_row, a_col, b_row, b_col, c_row, c_col = _FRAGMENTS
    swapped = b_row ^ 1
    monkeypatch.setattr(sys.modules[__name__], "_FRAGMENTS", (a_row, a_col, swapped, b_col, c_row, c_col))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((20, 40)), rng.standard_normal((40, 24))
    got = _emulate_gemm_mma(a, b, _mma_config())
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)


def test_gemm_mma_launch_order_covers_every_tile_once():
    for group in (1, 3, 8):
        cfg = _mma_config(GROUP_M=group)
        for grid_x, grid_y in ((1, 1), (16, 32), (5, 7), (3, 17), (1, 9)):
            tiles = [_block_origin(x, y, grid_x, grid_y, cfg) for y in range(grid_y) for x in range(grid_x)]
            assert sorted(tiles) == sorted((m * cfg["BM"], n * cfg["BN"]) for m in range(grid_y) for n in range(grid_x))
    # GROUP_M = 8 at 4096^3: the first 8 ids walk down one block column, 8 block rows
    cfg = _mma_config(GROUP_M=8)
    assert [_block_origin(i, 0, 16, 32, cfg) for i in range(9)] == \
        [(m * cfg["BM"], 0) for m in range(8)] + [(0, cfg["BN"])]


@pytest.mark.parametrize("bk, bn", [(32, 128), (32, 64), (64, 128), (32, 256), (64, 256)])
def test_gemm_mma_swizzle_is_a_permutation_and_conflict_free(bk, bn):
    cfg = _mma_config(BK=bk, BN=bn)
    for chunks, swz in ((cfg["A_CHUNKS"], lambda r, c: _swz_a(r, c, cfg)), (cfg["B_CHUNKS"], _swz_b)):
        rows = 64
        # every (row, chunk) lands on a distinct chunk of the tile, inside its own row
        slots = {r * chunks + swz(r, c) for r in range(rows) for c in range(chunks)}
        assert slots == set(range(rows * chunks))
        # the 8 rows an ldmatrix phase reads (same logical chunk, 8 consecutive rows from a multiple of 8)
        # hit 8 distinct 16-byte bank groups
        for r0 in range(0, rows, 8):
            for c in range(chunks):
                groups = {(r * chunks + swz(r, c)) % 8 for r in range(r0, r0 + 8)}
                assert len(groups) == 8, (chunks, r0, c, groups)


def test_gemm_mma_without_the_swizzle_would_conflict():
    """The check inside _ldmatrix_x4 can fail: plain row-major rows of 128 halves collide 8 ways."""
    import numpy as np
    mem = np.zeros(32 * 128)
    addrs = [(lane % 16) * 256 + (lane // 16) * 16 for lane in range(32)]
    with pytest.raises(AssertionError, match="bank conflict"):
        _ldmatrix_x4(mem, addrs, trans=True)


def test_ldmatrix_emulation_follows_the_ptx_table():
    """Lane l, register m: row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix m (transposed: of its
    transpose), where lanes 8m..8m+7 gave matrix m's row addresses."""
    import numpy as np
    mem = np.arange(32 * 64, dtype=float)                     # 32 rows of 64 halves (128 bytes)
    addrs = [r * 128 + 16 * (r % 8) for r in range(32)]      # row r at chunk r % 8 of its own row
    for trans in (False, True):
        got = _ldmatrix_x4(mem, addrs, trans)
        for lane in range(32):
            for m in range(4):
                for e in range(2):
                    row, col = (lane // 4, 2 * (lane % 4) + e) if not trans else (2 * (lane % 4) + e, lane // 4)
                    assert got[lane, m, e] == mem[addrs[8 * m + row] // 2 + col]


@pytest.mark.parametrize("changes", [{}, {"BM": 256, "BN": 128, "WARPS_M": 4, "WARPS_N": 2}, {"BN": 128, "BK": 64},
                                     {"BN": 128}, {"BK": 64}, {"BN": 128, "WARPS_N": 2}])
def test_gemm_mma_producer_loads_every_element_of_both_tiles_exactly_once_per_stage(changes):
    cfg = _mma_config(**changes)
    for rows, chunks, swz in ((cfg["BM"], cfg["A_CHUNKS"], lambda r, c: _swz_a(r, c, cfg)),
                              (cfg["BK"], cfg["B_CHUNKS"], _swz_b)):
        assert rows * chunks % cfg["THREADS"] == 0
        sources, slots = [], []
        for tid in range(cfg["THREADS"]):
            for p in range(rows * chunks // cfg["THREADS"]):
                i = tid + p * cfg["THREADS"]
                r, ch = i // chunks, i % chunks
                sources += [(r, ch * 8 + e) for e in range(8)]
                slots += [(r * chunks + swz(r, ch)) * 8 + e for e in range(8)]
        assert sorted(sources) == [(r, c) for r in range(rows) for c in range(chunks * 8)]
        assert sorted(slots) == list(range(rows * chunks * 8))


def test_gemm_mma_pipeline_group_count_leaves_the_right_slice_landed():
    """Prologue: STAGES commits, wait_group STAGES-1 leaves group 0 (slice 0) complete. Before the barrier
    of slice t: STAGES + t commits, wait_group STAGES-2 leaves groups 0..t+1 complete (slice t+1 among
    them); the refill then goes to slice t's buffer, which holds none of slices t+1 .. t+STAGES-1."""
    for stages in (2, 3, 4, 5):
        for slices in (1, 2, 3, 5, 9):
            committed = stages
            assert committed - (stages - 1) >= 1
            for t in range(slices - 1):
                assert committed - (stages - 2) >= t + 2
                live = {(t + d) % stages for d in range(1, stages)}
                assert t % stages not in live
                committed += 1


# In the worker that compiles every solution kernel for the same architecture (tests/cuda/test_cross_arch.py's group):
# the same compile, made once there (compile_cuda keeps it for the process).
@pytest.mark.parametrize("arch", [pytest.param(a, marks=pytest.mark.xdist_group(f"shared-cross-cuda-{a}"))
                                  for a in ("sm_80", "sm_86", "sm_89", "sm_90")])
def test_gemm_mma_compiles_without_spills_and_uses_mma_ldmatrix_cp_async(arch):
    from grader.cuda.archs import by_name
    from grader.notebooks.shipped import build_cuda
    built = build_cuda("04_tensor_cores", "GEMM_MMA_SRC", MMA_SRC, by_name(arch))
    assert built.ok, built.error
    ptx = built.compiled.ptx
    assert ptx.count("mma.sync.aligned.m16n8k16") >= 64 and "ldmatrix.sync.aligned.m8n8.x4.trans" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared" in ptx and "cp.async.cg.shared.global" in ptx
    cfg = _mma_config()
    assert f"cp.async.wait_group {cfg['STAGES'] - 1}" in ptx and f"cp.async.wait_group {cfg['STAGES'] - 2}" in ptx
    usage = built.usage["gemm_mma"]
    assert usage.registers <= 255 and usage.spill_bytes == 0 and usage.stack == 0, usage
    # Every stage is dynamic shared memory: none static, and the launch's bytes fit this architecture.
    assert usage.static_shared == 0
    assert cfg["SMEM_BYTES"] == 96 * 1024 <= by_name(arch).max_shared_per_block
    assert not built.problems(by_name(arch))["gemm_mma"]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", [n for n in MMA_VARIANTS if n != SHIPPED])
def test_gemm_mma_variants_compile_without_spills(name, arch):
    import re
    from grader.cuda.archs import by_name
    from grader.notebooks.shipped import build_cuda
    src = MMA_SRC
    for key, value in MMA_VARIANTS[name].items():
        src, n = re.subn(rf"^#define {key} \d+\b", f"#define {key} {value}", src, flags=re.M)
        assert n == 1, key
    built = build_cuda("04_tensor_cores", "GEMM_MMA_SRC", src, by_name(arch))
    assert built.ok, built.error
    usage = built.usage["gemm_mma"]
    assert usage.registers <= 255 and usage.spill_bytes == 0 and usage.stack == 0 and usage.static_shared == 0, usage
    if arch == "sm_90":   # the GPU the variants are timed on
        assert _mma_config(src)["SMEM_BYTES"] <= by_name("sm_90").max_shared_per_block
    if _branch_free(name):   # copies that zero-fill by the ignore-src predicate
        assert "cp.async.cg.shared.global" in built.compiled.ptx and ", 16, z;" in built.compiled.ptx


def test_gemm_mma_launcher_asks_for_the_kernels_shared_memory_and_grid():
    """The launcher's grid and shared_mem come from the same #defines as the kernel's SMEM_BYTES."""
    from grader.cuda import launches
    ns = {}
    cell = "".join(next(c for c in json.loads(SOLUTION.read_text())["cells"]
                        if c["metadata"]["nbgrader"]["grade_id"] == "mma-solution")["source"])
    exec("import numpy as np\nfrom grader import load_kernel\n" + cell, ns)
    cfg = _mma_config()
    assert ns["MMA_SHARED"] == cfg["SMEM_BYTES"] and ns["MMA_THREADS"] == cfg["THREADS"]
    seen = []
    with launches.intercept(lambda launch: seen.append((launch.grid, launch.block, launch.shared_mem))):
        ns["gemm_mma"](torch.empty(300, 40, dtype=torch.float16), torch.empty(40, 600, dtype=torch.float16),
                       torch.empty(300, 600))
    assert seen == [((3, 3), (256,), 96 * 1024)]


def test_gemm_mma_is_refused_for_sm75_with_the_reason():
    from grader.cuda.archs import by_name
    from grader.notebooks.shipped import build_cuda
    built = build_cuda("04_tensor_cores", "GEMM_MMA_SRC", MMA_SRC, by_name("sm_75"))
    assert not built.ok and "cp.async" in built.error and "needs compute capability 8.0 or newer" in built.error


def test_gemm_mma_tensor_core_check_passes_on_a_cpu(capsys):
    ns = {}
    cell = "".join(next(c for c in json.loads(SOLUTION.read_text())["cells"]
                        if c["metadata"]["nbgrader"]["grade_id"] == "mma-solution")["source"])
    exec("import numpy as np\nfrom grader import load_kernel\n" + cell, ns)
    (listing,) = ch04.check_tensor_cores(ns["gemm_mma"], what="4c", verbose=False)
    assert listing.name == "gemm_mma" and listing.tensor_core_instructions()


def test_gemm_mma_exercise_reuses_exercise_4():
    ex, base = ch04.MMA_GEMM, ch04.WMMA_GEMM
    assert ex.key == "4c" and ch04.BAR_KEYS["4c-stretch"] == "4c"
    for field in ("make_inputs", "make_output", "reference", "baseline", "tolerance", "visible_sizes",
                  "speed_size", "requirements", "flops", "bytes_moved"):
        assert getattr(ex, field) is getattr(base, field), field
    from grader.harness.bars import load_table
    assert "4c-stretch" in load_table()[0]
