"""Chapter 3 (tiling, SGEMM): the grader's logic on the CPU, the notebooks through `ladder check` (on
a CPU: predictions graded, kernels compile-checked; on a GPU: the full verdicts), and the synthetic
students of tests/submissions/ch03/."""

import importlib.util
import json
import re

import numpy as np
import pytest
import torch

from conftest import HAS_GPU, ROOT, cells_by_id, ladder_check, torch_kernel
from grader.harness.bars import bar_for
from grader.chapters import ch03
from grader.errors import CheckFailed, NotImplementedYet
from grader.harness.exercise import check_correctness, measure_speed
from grader.cuda.nvrtc import compile_for_archs
from grader.cuda.nvrtc import is_stub
from grader.learner.cells import cuda_sources
from grader.harness.timing import CPUBackend
from submissions.build import build

SOLUTION = ROOT / "solutions/03_tiling/03_tiling.ipynb"
RELEASED = ROOT / "course/03_tiling/03_tiling.ipynb"
CPU_SHAPES = [(1, 1, 1), (7, 13, 5), (129, 65, 33), (33, 1, 17), (1, 40, 9)]


@torch_kernel


def torch_sgemm(a, b, out):
    torch.mm(a, b, out=out)


def _stub(*args):
    raise NotImplementedError()


# ------------------------------------------------------------------------ the exercise as data

def test_exercise_shapes_reference_flops_and_bytes():
    ex = ch03.SGEMM
    a, b = ex.make_inputs((3, 5, 4), torch.Generator().manual_seed(0), "cpu")
    out = ex.make_output((3, 5, 4), "cpu")
    assert a.shape == (3, 4) and b.shape == (4, 5) and out.shape == (3, 5)
    assert a.dtype == b.dtype == out.dtype == torch.float32
    assert torch.equal(ex.reference(a.double(), b.double()), a.double() @ b.double())
    assert ex.flops((4096, 4096, 4096)) == 2 * 4096**3
    assert ex.bytes_moved((2, 3, 5)) == 4 * (2 * 5 + 5 * 3 + 2 * 3)
    assert ex.ceiling == "fp32_tflops" and ex.baseline_name == "torch.mm fp32"
    assert ex.describe_size((7, 13, 5)) == "M=7, N=13, K=5" and ex.describe_size((64,) * 3) == "M=N=K=64"
    assert ex.speed_size() == (4096, 4096, 4096)
    assert any(m != n for m, n, _ in ex.visible_sizes)


def test_a_right_product_passes_on_every_awkward_shape(capsys):
    result = check_correctness(ch03.SGEMM, torch_sgemm, sizes=CPU_SHAPES, trials=2, device="cpu")
    assert result.trials == 2 * len(CPU_SHAPES)
    assert "✓ 3 SGEMM: correct on 10 trials (M=N=K=1, M=7, N=13, K=5" in capsys.readouterr().out


def test_unwritten_last_column_is_named_and_changed_inputs_are_caught():
    @torch_kernel
    def misses_last_column(a, b, out):
        out[:, :-1] = a @ b[:, :-1]

    with pytest.raises(CheckFailed) as info:
        check_correctness(ch03.SGEMM, misses_last_column, sizes=[(7, 13, 5)], trials=1, device="cpu")
    msg = str(info.value)
    assert "M=7, N=13, K=5" in msg and "7 of 91 elements are wrong" in msg
    assert "First wrong element at index [0, 12]" in msg and "got nan" in msg

    @torch_kernel

    def zeroes_b(a, b, out):
        torch.mm(a, b, out=out)
        b.zero_()

    with pytest.raises(CheckFailed, match="changed its input `b`"):
        check_correctness(ch03.SGEMM, zeroes_b, sizes=[(4, 5, 6)], trials=1, device="cpu", verbose=False)


# ------------------------------------------------------------------------ tolerance

def test_tolerance_grows_with_k():
    u = 2.0**-24
    assert ch03.sgemm_tolerance((1, 1, 1)) == (1e-5, pytest.approx(1e-5 + 10 * u))
    assert ch03.sgemm_tolerance((4096, 4096, 4096)) == (1e-5, pytest.approx(2.4514e-3, rel=1e-3))
    assert ch03.SGEMM.tolerance_for((5, 7, 4096)) == ch03.sgemm_tolerance((1, 1, 4096))


@torch_kernel


def _sequential(a, b, out):
    """One product at a time into one fp32 accumulator, a multiply and an add each (two roundings):
    the worst summation order we measured."""
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        acc += a[:, k:k + 1] * b[k:k + 1, :]
    out.copy_(acc)


@torch_kernel


def _reversed(a, b, out):
    _sequential(a.flip(1), b.flip(0), out)


@torch_kernel


def _tf32(a, b, out):
    out.copy_((ch03.round_to_tf32(a).double() @ ch03.round_to_tf32(b).double()).float())


@torch_kernel


def _fp16_inputs(a, b, out):
    out.copy_((a.half().double() @ b.half().double()).float())


@torch_kernel


def _fp16_output(a, b, out):
    out.copy_((a.double() @ b.double()).half().float())


@pytest.mark.parametrize("fn", [torch_sgemm, _sequential, _reversed])
def test_fp32_in_any_order_passes_at_k_4096_with_margin(fn):
    """The experiment behind sgemm_tolerance, at 64 x 256 x 4096 instead of 4096^3."""
    size = (64, 256, 4096)
    check_correctness(ch03.SGEMM, fn, sizes=[size], trials=2, device="cpu", verbose=False)
    a, b = ch03.SGEMM.make_inputs(size, torch.Generator().manual_seed(1), "cpu")
    out = torch.empty(64, 256)
    fn(a, b, out)
    worst = (out.double() - a.double() @ b.double()).abs().max().item()
    assert worst < 0.5 * ch03.sgemm_tolerance(size)[1]


@pytest.mark.parametrize("k", [1, 5, 128, 4096])
@pytest.mark.parametrize("fn", [_tf32, _fp16_inputs, _fp16_output])
def test_tf32_and_fp16_fail_at_every_k(fn, k):
    with pytest.raises(CheckFailed, match="wrong result"):
        check_correctness(ch03.SGEMM, fn, sizes=[(64, 64, k)], trials=1, device="cpu", verbose=False)


def test_round_to_tf32_keeps_ten_mantissa_bits_and_ties_to_even():
    one = 1.0
    ulp = 2.0**-10  # TF32's spacing just above 1
    x = torch.tensor([one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2.0**-20, -3.0, 1e-30, 5.5])
    y = ch03.round_to_tf32(x)
    assert y.tolist()[:3] == [one, one + 2 * ulp, one + ulp]
    assert y.tolist()[3:] == pytest.approx([-3.0, 1e-30, 5.5], rel=2.0**-11)
    r = ch03.round_to_tf32(torch.randn(1000, generator=torch.Generator().manual_seed(0)))
    assert torch.all((r.view(torch.int32) & 0x1FFF) == 0) and torch.equal(ch03.round_to_tf32(r), r)


@pytest.mark.skipif(HAS_GPU, reason="the CPU's rows; on a GPU show_precision times the real TF32 and fp16 paths")
def test_show_precision_on_a_cpu(capsys):
    errors = ch03.show_precision(k=512)
    atol = ch03.sgemm_tolerance((1, 1, 512))[1]
    assert errors["fp32"] < atol / 4 < atol < errors["TF32 (emulated)"]
    assert errors["fp16 inputs (emulated)"] > atol
    assert "outside tolerance" in capsys.readouterr().out


# ------------------------------------------------------------------------ the baseline's precision

@pytest.fixture
def precision_state():
    m = torch.backends.cuda.matmul

    def state():
        out = {}
        for name, get in (("legacy", torch.get_float32_matmul_precision), ("allow_tf32", lambda: m.allow_tf32),
                          ("new", lambda: m.fp32_precision)):
            try:
                out[name] = get()
            except RuntimeError:
                out[name] = "raises"
        return out

    yield state
    torch.set_float32_matmul_precision("highest")
    m.fp32_precision = "none"


@pytest.mark.parametrize("notebook_sets", [
    lambda m: None,
    lambda m: torch.set_float32_matmul_precision("high"),
    lambda m: setattr(m, "allow_tf32", True),
    lambda m: setattr(m, "fp32_precision", "tf32"),   # the new API: the legacy getters then raise
    lambda m: torch.set_float32_matmul_precision("medium"),
], ids=["default", "precision-high", "allow_tf32", "new-api-tf32", "precision-medium"])
def test_baseline_runs_in_true_fp32_and_restores_the_notebooks_settings(monkeypatch, precision_state, notebook_sets):
    notebook_sets(torch.backends.cuda.matmul)
    before = precision_state()
    inside = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda *args, **kw: (inside.append(precision_state()), real_mm(*args, **kw))[1])
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    out = torch.empty(3, 5)
    ch03.torch_mm_fp32(a, b, out)
    assert inside == [{"legacy": "highest", "allow_tf32": False, "new": "ieee"}]
    assert precision_state() == before
    assert torch.allclose(out, a @ b)


def test_speed_is_reported_in_tflops_against_torch_mm():
    result = measure_speed(ch03.SGEMM, torch_sgemm, "3", device="cpu", backend=CPUBackend(0.005), size=(64, 48, 32))
    assert result.baseline_name == "torch.mm fp32" and result.unit == "TFLOP/s" and result.bar == 0.30
    assert result.flops == 2 * 64 * 48 * 32 and result.ceiling_name == "fp32_tflops"
    assert "M=64, N=48, K=32" in result.report()


def test_speed_check_first_checks_non_square_shapes(monkeypatch):
    seen = []

    def fake_correctness(ex, fn, sizes, trials, verbose=True):
        seen.append(list(sizes))
        raise CheckFailed("stop here")

    monkeypatch.setattr(ch03, "check_correctness", fake_correctness)
    with pytest.raises(CheckFailed, match="stop here"):
        ch03.check_sgemm_speed(torch_sgemm)
    assert seen and all(m != n for m, n, _ in seen[0])


def test_bars():
    graded, stretch, warptile = bar_for("3"), bar_for("3-stretch"), bar_for("3-warptile")
    assert graded.bar == 0.30 and graded.graded and "TF32 off" in graded.baseline
    assert not stretch.graded and stretch.bar > graded.bar
    assert not warptile.graded and warptile.bar > stretch.bar and "TF32 off" in warptile.baseline
    assert set(ch03.BAR_KEYS) == {"3", "3-stretch", "3-warptile"}
    assert [s.launcher for s in ch03.SANITIZE] == ["sgemm", "sgemm_v2", "sgemm_v3"]


# ------------------------------------------------------------------------ predictions

def test_napkin_math_accepts_the_right_answers(capsys):
    ch03.check_napkin_math(lambda m, n, k: 2 * m * n * k, lambda t, g: t * 1e12 / (g * 1e9))
    ch03.check_intensity(lambda m, n, k: 0.25, lambda m, n, k, t: t / 4)
    # Written the long way, as counts of FLOPs and bytes: the same numbers.
    ch03.check_intensity(lambda m, n, k: 2 * m * n * k / (8 * m * n * k),
                         lambda m, n, k, t: 2 * m * n * k / ((m // t) * (n // t) * 2 * t * k * 4))
    out = capsys.readouterr().out
    assert "✓ 3.0" in out and out.count("✓ 3.1") == 2


@pytest.mark.parametrize("flops, ridge, message", [
    (lambda m, n, k: m * n * k, lambda t, g: t * 1e12 / (g * 1e9),
     r"gemm_flops\(4096, 4096, 4096\) \(hint.*2 FLOPs\) = 68719476736, expected 137438953472"),
    (lambda m, n, k: 2 * m * n * k, lambda t, g: t / g,
     r"ridge_point\(51.6, 3000.0\) \(hint.*\) = 0.0172, expected 17.2"),
    (lambda m, n, k: "2mnk", lambda t, g: 1.0, "should return a number"),
])
def test_napkin_math_rejects_wrong_answers(flops, ridge, message):
    with pytest.raises(CheckFailed, match=message):
        ch03.check_napkin_math(flops, ridge)


@pytest.mark.parametrize("naive, tiled, message", [
    # counts only the load of A
    (lambda m, n, k: 0.5, lambda m, n, k, t: t / 4, r"naive_intensity\(4096, 4096, 4096\) \(hint.*\) = 0.5, expected 0.25"),
    # forgets that each block loads both strips
    (lambda m, n, k: 0.25, lambda m, n, k, t: t / 2, r"tiled_intensity\(4096, 4096, 4096, 32\) \(hint.*\) = 16.0, expected 8.0"),
    # counts elements, not bytes
    (lambda m, n, k: 1.0, lambda m, n, k, t: float(t), r"= 1.0, expected 0.25"),
])
def test_intensity_rejects_wrong_counts(naive, tiled, message):
    with pytest.raises(CheckFailed, match=message):
        ch03.check_intensity(naive, tiled)


def test_predictions_not_written_yet_say_so():
    with pytest.raises(NotImplementedYet, match="exercise 3.0 is not written yet"):
        ch03.check_napkin_math(_stub, _stub)
    with pytest.raises(NotImplementedYet, match="exercise 3.1 is not written yet"):
        ch03.check_intensity(_stub, _stub)


# ------------------------------------------------------------------------ helpers and plots

def test_gpu_helpers_without_a_gpu_print_and_return_none(monkeypatch, capsys):
    import grader.harness.exercise as exercise
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (False, "no GPU found (test)"))
    assert ch03.measure_sgemm(torch_sgemm, "naive, coalesced") is None
    assert ch03.check_sgemm_stretch(torch_sgemm) is None
    assert ch03.check_sgemm_warptile(torch_sgemm) is None
    out = capsys.readouterr().out
    assert "naive, coalesced: not measured" in out and out.count("no GPU found") >= 3


def test_versions_not_written_yet_do_not_stop_run_all(capsys):
    def stub(a, b, out):
        raise NotImplementedError()

    assert ch03.measure_sgemm(stub, "32 x 32 tile") is None
    assert ch03.check_sgemm_stretch(stub) is None
    assert ch03.check_sgemm_warptile(stub) is None
    ch03.check_warp_reuse(_stub)
    out = capsys.readouterr().out
    assert "32 x 32 tile: not written yet" in out and "Stretch goal not attempted yet" in out
    assert "write sgemm_v3 and SGEMM_V3_SRC above" in out and "Prediction not written yet" in out


def test_measure_sgemm_prints_one_line_per_version(monkeypatch, capsys):
    real = ch03.measure_speed
    monkeypatch.setattr(ch03, "measure_speed",
                        lambda ex, fn, key, size: real(ex, fn, key, device="cpu", backend=CPUBackend(0.005), size=size))
    r = ch03.measure_sgemm(torch_sgemm, "naive", size=(32, 16, 8))
    line = capsys.readouterr().out
    assert r is not None and line.startswith("naive ") and "TFLOP/s" in line and "x torch.mm fp32" in line


def test_plots_draw_each_version_beside_torch(capsys):
    import matplotlib
    matplotlib.use("Agg")
    r = measure_speed(ch03.SGEMM, torch_sgemm, "3", device="cpu", backend=CPUBackend(0.005), size=(64, 48, 32))
    fig = ch03.plot_results({"naive": r, "32 x 32 tile": None, "register-blocked": r})
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["naive", "register-blocked", "torch.mm fp32"], "one size: no size in the labels"
    small = measure_speed(ch03.SGEMM, torch_sgemm, "3", device="cpu", backend=CPUBackend(0.005), size=(32, 16, 8))
    fig = ch03.plot_results({"naive": small, "register-blocked": r})
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["naive\nM=32, N=16, K=8", "torch.mm fp32\nM=32, N=16, K=8", "register-blocked\nM=64, N=48, K=32",
                      "torch.mm fp32\nM=64, N=48, K=32"], "two sizes: each with torch at its own size"
    assert ch03.plot_results({"naive": None}) is None
    fig = ch03.plot_roofline(lambda m, n, k: 0.25, lambda m, n, k, t: t / 4, results={"naive": r})
    fig = ch03.plot_roofline(_stub, _stub, verbose=False)
    out = capsys.readouterr().out
    assert "Nothing to plot yet" in out and "ridge point 17.2 FLOP/byte" in out and "Write naive_intensity" in out
    assert "128 x 128 block    32.00 FLOP/byte, above the ridge" in out


def test_figures_script_draws_every_figure():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    spec = importlib.util.spec_from_file_location("make_ch03_figures", ROOT / "assets/figures/make_ch03_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for draw in (module.draw_naive, module.draw_tiling, module.draw_register_blocking, module.draw_warp_tiling):
        plt.close(draw())
    text = SOLUTION.read_text()
    for name in ("ch03_naive", "ch03_tiling", "ch03_register_blocking", "ch03_warp_tiling"):
        assert (ROOT / f"assets/figures/{name}.png").is_file() and f"attachment:{name}.png" in text


# ------------------------------------------------------------------------ kernels

def _kernel(name):
    return dict(cuda_sources(SOLUTION)[0])[name]


def test_solution_notebook_grades_nine_points():
    nb = json.loads(SOLUTION.read_text())
    graded = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"].get("points")
              for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")}
    assert graded == {"gemm-napkin-test": 1, "intensity-test": 1, "sgemm-visible": 2, "sgemm-hidden": 2,
                      "sgemm-speed": 2, "diagnose-test": 1}


def test_register_blocked_kernel_keeps_its_accumulators_in_registers():
    (compiled,) = compile_for_archs(_kernel("SGEMM_SRC"), "sgemm_blocked", ("sm_90",))
    # An array indexed at run time would live in a local-memory "depot"; the unrolled loops avoid it.
    assert "__local_depot" not in compiled.ptx
    assert compiled.ptx.count("fma.rn.f32") >= 8 * 8 * 8  # one step of 8 k, 64 FMAs each, unrolled


def test_stretch_kernel_moves_16_bytes_per_instruction():
    (compiled,) = compile_for_archs(_kernel("SGEMM_V2_SRC"), "sgemm_v2", ("sm_90",))
    ptx = compiled.ptx
    assert re.search(r"ld\.global(\.nc)?\.v4\.f32", ptx) and "ld.shared.v4.f32" in ptx and "st.global.v4.f32" in ptx
    assert "__local_depot" not in ptx


# ------------------------------------------------------------------------ the warp-tiling stretch goal

def _gpu_script():
    """assets/results/calibration/top-rungs/ch03_gpu.py: the tile variants, their compile report and the NumPy emulation."""
    spec = importlib.util.spec_from_file_location("ch03_gpu", ROOT / "assets/results/calibration/top-rungs/ch03_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_warp_tiled_kernel_moves_16_bytes_per_instruction_in_registers():
    (compiled,) = compile_for_archs(_kernel("SGEMM_V3_SRC"), "sgemm_v3", ("sm_90",))
    ptx = compiled.ptx
    assert re.search(r"ld\.global(\.nc)?\.v4\.f32", ptx) and "ld.shared.v4.f32" in ptx and "st.global.v4.f32" in ptx
    assert "__local_depot" not in ptx
    assert ptx.count("fma.rn.f32") >= 8 * 64   # one step of BK = 8, 64 FMAs a thread, unrolled


def test_warp_tiled_launcher_matches_the_kernels_defines():
    gpu = _gpu_script()
    consts = gpu.tile_constants(_kernel("SGEMM_V3_SRC"))
    cell = next("".join(c["source"]) for c in json.loads(SOLUTION.read_text())["cells"]
                if c["metadata"].get("nbgrader", {}).get("grade_id") == "sgemm-v3-solution")
    (bm, bn, threads), = re.findall(r"bm, bn, threads = (\d+), (\d+), (\d+)", cell)
    assert (int(bm), int(bn), int(threads)) == (consts["BM"], consts["BN"], consts["THREADS"])
    assert consts["THREADS"] == (consts["BM"] // consts["WM"]) * (consts["BN"] // consts["WN"]) * 32


@pytest.mark.parametrize("variant", list(_gpu_script().VARIANTS))
def test_every_tile_variant_compiles_within_registers_and_shared_memory(variant):
    gpu = _gpu_script()
    src = gpu.variant_source(_kernel("SGEMM_V3_SRC"), gpu.VARIANTS[variant])
    for arch in ("sm_75", "sm_90"):
        report = gpu.compile_report(src, arch)
        assert report["spill_bytes"] == 0 and not report["local_depot"], (arch, report)
        assert report["registers"] <= 255 and report["static_shared"] <= 48 * 1024, (arch, report)


@pytest.mark.parametrize("variant", list(_gpu_script().VARIANTS))
def test_every_tile_variant_writes_each_output_once_from_this_steps_tiles(variant):
    """The kernel's index arithmetic run in NumPy (ch03_gpu.emulate): every output written exactly once
    and right, every shared-memory cell of a tile stored once per step, every read sees that step's
    tile, no step reads a cell it stores, float4s aligned and never across an edge of A, B or C."""
    gpu = _gpu_script()
    src = gpu.variant_source(_kernel("SGEMM_V3_SRC"), gpu.VARIANTS[variant])
    gen = np.random.default_rng(3)
    for m, n, k in gpu.EMULATED_SIZES:
        a, b = gen.standard_normal((m, k)), gen.standard_normal((k, n))
        np.testing.assert_allclose(gpu.emulate(src, a, b), a @ b, rtol=1e-12, atol=1e-12)


def test_the_emulation_catches_warps_that_do_not_cover_the_block_tile():
    gpu = _gpu_script()
    src = _kernel("SGEMM_V3_SRC")
    a, b = np.ones((130, 20)), np.ones((20, 260))
    # 32-row warp tiles, but as many threads as 64-row ones would need: half the block tile is never written.
    short = (src.replace("#define WM 64", "#define WM 32").replace("#define WMITER 2", "#define WMITER 1")
             .replace("#define THREADS ((BM / WM)", "#define THREADS ((BM / 64)"))
    assert short != src and gpu.tile_constants(short)["THREADS"] == 256
    with pytest.raises(AssertionError, match="never written"):
        gpu.emulate(short, a, b)
    with pytest.raises(ValueError, match="no single `#define NOPE"):
        gpu.variant_source(src, {"NOPE": 1})


def test_warp_reuse_prediction(capsys):
    ch03.check_warp_reuse(lambda rows, cols: (rows + cols) / (rows * cols))
    out = capsys.readouterr().out
    assert "✓ warp-tiling prediction" in out and "64 x 32  of C:  96 floats for 2048 FMAs, 0.047 per FMA" in out
    with pytest.raises(CheckFailed, match=r"smem_floats_per_fma\(1, 32\) \(hint.*\) = 1.0, expected 1.03125"):
        ch03.check_warp_reuse(lambda rows, cols: 1 / rows)


STUDENTS = ("correct", "stub", "naive_uncoalesced", "naive_coalesced", "smem_tile_32", "blocked_64x64",
            "blocktile_1d", "tf32_rounding", "wrong")


@pytest.mark.parametrize("name", STUDENTS)
def test_every_student_builds_and_its_own_kernels_compile(name, tmp_path):
    shipped = dict(cuda_sources(SOLUTION)[0])
    sources, stray = cuda_sources(build("ch03", "03_tiling", name, tmp_path / f"{name}.ipynb"))
    assert not stray
    for kernel, src in sources:
        if name == "stub" and kernel in ("SGEMM_SRC", "SGEMM_V2_SRC", "SGEMM_V3_SRC"):
            assert is_stub(src)
        elif src != shipped.get(kernel):  # the solution's own kernels are compiled by test_nvrtc.py
            (function,) = re.findall(r"__global__\s+void\s+(?:__launch_bounds__\(\w+\)\s+)?(\w+)\s*\(", src)
            assert compile_for_archs(src, function, ("sm_90",))


# ------------------------------------------------------------------------ notebooks

def _check_json(*notebooks):
    return {nb["path"]: nb for nb in ladder_check(*notebooks)[1]["notebooks"]}


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["03_tiling"], indirect=True)
def test_notebooks_on_a_cpu(tmp_path, graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py); the released
    notebook and a wrong student through `ladder check`.
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    wrong = build("ch03", "03_tiling", "wrong", tmp_path / "wrong.ipynb")
    reports = _check_json(RELEASED, wrong)
    released, student = reports[str(RELEASED)], reports[str(wrong)]
    _, solution, cells = graded_solution.as_check()

    assert cells["gemm-napkin-test"]["passed"] and cells["intensity-test"]["passed"]
    for gid in ("sgemm-visible", "sgemm-hidden", "sgemm-speed"):
        c = cells[gid]
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NoGPUError", c
        assert "no GPU found" in c["error"]["evalue"] and "compile for sm_80 and sm_90" in c["error"]["evalue"]
        assert "Traceback" not in c["error"]["evalue"]
    assert solution["score"] == 3 and solution["max_score"] == 9   # with the diagnosis and solution["error"] is None

    assert released["score"] == 0 and released["cells"]
    for c in released["cells"]:
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]

    cells = cells_by_id(student)
    assert cells["intensity-test"]["passed"] and cells["diagnose-test"]["passed"] and student["score"] == 2
    assert "gemm_flops(4096, 4096, 4096) (hint" in cells["gemm-napkin-test"]["error"]["evalue"]


# ------------------------------------------------------------------------ on a GPU

GPU_STUDENTS = ("stub", "naive_uncoalesced", "naive_coalesced", "smem_tile_32", "blocked_64x64", "tf32_rounding",
                "wrong")


@pytest.fixture(scope="module")
def gpu_reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ch03")
    built = {name: build("ch03", "03_tiling", name, tmp / f"{name}.ipynb") for name in GPU_STUDENTS}
    reports = _check_json(SOLUTION, *built.values())
    return {"correct": cells_by_id(reports[str(SOLUTION)]), **{n: cells_by_id(reports[str(p)]) for n, p in built.items()}}


@pytest.mark.gpu
@pytest.mark.slow
def test_solution_passes_every_graded_cell_on_a_gpu(gpu_reports):
    cells = gpu_reports["correct"]
    assert all(c["outcome"] == "pass" for c in cells.values()), {g: c["error"] for g, c in cells.items()}


@pytest.mark.gpu
@pytest.mark.slow
def test_a_simpler_register_blocked_kernel_is_correct_everywhere(gpu_reports):
    # 64 x 64 tiles, 4 x 4 per thread: 0.32x on an H200, too close to the bar to assert its speed cell.
    cells = gpu_reports["blocked_64x64"]
    assert all(cells[g]["passed"] for g in ("gemm-napkin-test", "intensity-test", "sgemm-visible", "sgemm-hidden"))


@pytest.mark.gpu
@pytest.mark.slow
def test_stub_fails_every_graded_cell_with_not_implemented_on_a_gpu(gpu_reports):
    for c in gpu_reports["stub"].values():
        assert c["error"] and c["error"]["ename"] == "NotImplementedYet", c


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("name", ["naive_uncoalesced", "naive_coalesced", "smem_tile_32"])
def test_previous_rungs_are_correct_but_below_the_bar(gpu_reports, name):
    cells = gpu_reports[name]
    assert cells["sgemm-visible"]["passed"] and cells["sgemm-hidden"]["passed"]
    speed = cells["sgemm-speed"]
    assert not speed["passed"] and "below the bar" in speed["error"]["evalue"], speed


@pytest.mark.gpu
@pytest.mark.slow
def test_tf32_rounding_fails_every_kernel_cell(gpu_reports):
    cells = gpu_reports["tf32_rounding"]
    for gid in ("sgemm-visible", "sgemm-hidden", "sgemm-speed"):
        assert not cells[gid]["passed"] and "wrong result" in cells[gid]["error"]["evalue"], cells[gid]


@pytest.mark.gpu
@pytest.mark.slow
def test_wrong_student_earns_only_the_intensity_and_diagnosis_points_on_a_gpu(gpu_reports):
    # `ladder check` runs the student's notebook as released: the hidden cell holds only its visible
    # part (1x1x1 and 7x13x5, which one block covers whichever way the grid is swapped), so it passes
    # there; nbgrader puts the hidden shapes back when grading, and they catch the bug (next test). The
    # diagnosis is the solution's, which the wrong student leaves alone (as on a CPU, above).
    cells = gpu_reports["wrong"]
    assert {g for g, c in cells.items() if c["passed"]} == {"intensity-test", "sgemm-hidden", "diagnose-test"}
    assert "never written" in cells["sgemm-visible"]["error"]["evalue"]


@pytest.mark.gpu
def test_hidden_shapes_catch_the_swapped_grid():
    from grader.errors import CheckFailed
    from submissions.build import launchers

    sgemm = launchers("ch03", "wrong", ["sgemm-solution"])["sgemm"]
    with pytest.raises(CheckFailed, match="wrong result"):
        ch03.check_sgemm(sgemm, sizes=[(129, 65, 33), (300, 200, 100)], trials=1)
