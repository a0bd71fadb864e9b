"""Chapter 2 (coalescing, transpose): the grader's logic on the CPU, the notebooks through `ladder
check` (on a CPU: predictions graded, kernels compile-checked; on a GPU: the full verdicts), and the
synthetic students of tests/submissions/ch02/."""

import importlib.util
import json
import math
from types import SimpleNamespace

import pytest
import torch

from conftest import HAS_GPU, ROOT, cells_by_id, ladder_check, torch_kernel
from grader.harness.bars import bar_for
from grader.chapters import ch02
from grader.errors import CheckFailed, NotImplementedYet
from grader.harness.exercise import check_correctness, measure_speed
from grader.cuda.nvrtc import compile_for_archs
from grader.cuda.nvrtc import is_stub
from grader.learner.cells import cuda_sources
from grader.harness.timing import CPUBackend
from submissions.build import build

SOLUTION = ROOT / "solutions/02_coalescing/02_coalescing.ipynb"
RELEASED = ROOT / "course/02_coalescing/02_coalescing.ipynb"
CPU_SHAPES = [(1, 1), (1, 7), (7, 1), (33, 65), (64, 31)]


@torch_kernel


def torch_transpose(x, out):
    out.copy_(x.t())


# ------------------------------------------------------------------------ the exercise as data

def test_exercise_shapes_reference_and_bytes():
    ex = ch02.TRANSPOSE
    gen = torch.Generator().manual_seed(0)
    (x,) = ex.make_inputs((3, 5), gen, "cpu")
    out = ex.make_output((3, 5), "cpu")
    assert x.shape == (3, 5) and x.dtype == torch.float32 and out.shape == (5, 3)
    assert torch.equal(ex.reference(x.double()), x.double().t())
    assert ex.bytes_moved((8192, 8192)) == 2 * 4 * 8192 * 8192
    assert ex.tolerance_for((8192, 8192)) == (0.0, 0.0)
    assert ex.describe_size((100, 37)) == "100×37"
    assert set(ex.baseline_alternatives) == {"x.t().contiguous()"} and ex.baseline_name == "out.copy_(x.t())"


def test_a_right_transpose_passes_on_every_awkward_shape(capsys):
    result = check_correctness(ch02.TRANSPOSE, torch_transpose, sizes=CPU_SHAPES, trials=2, device="cpu")
    assert result.trials == 2 * len(CPU_SHAPES)
    assert "✓ 2 matrix transpose: correct on 10 trials (1×1, 1×7, 7×1, 33×65, 64×31)" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rounding_through_a_narrower_type_fails(dtype):
    @torch_kernel
    def narrow(x, out):
        out.copy_(x.t().to(dtype).float())

    with pytest.raises(CheckFailed, match="wrong result"):
        check_correctness(ch02.TRANSPOSE, narrow, sizes=[(64, 31)], trials=1, device="cpu", verbose=False)


def test_tolerance_is_zero_a_one_ulp_change_fails():
    @torch_kernel
    def one_ulp_off(x, out):
        out.copy_(torch.nextafter(x.t(), torch.tensor(float("inf"))))

    with pytest.raises(CheckFailed, match="wrong result"):
        check_correctness(ch02.TRANSPOSE, one_ulp_off, sizes=[(8, 8)], trials=1, device="cpu", verbose=False)


def test_unwritten_last_column_is_named_by_row_and_column():
    @torch_kernel
    def misses_last_column(x, out):
        out[:, :-1] = x.t()[:, :-1]

    with pytest.raises(CheckFailed) as info:
        check_correctness(ch02.TRANSPOSE, misses_last_column, sizes=[(33, 65)], trials=1, device="cpu")
    msg = str(info.value)
    assert "33×65" in msg and "65 of 2,145 elements are wrong" in msg
    assert "First wrong element at index [0, 32]" in msg and "got nan" in msg


def test_changing_the_input_is_caught():
    @torch_kernel
    def zeroes_x(x, out):
        out.copy_(x.t())
        x.zero_()

    with pytest.raises(CheckFailed, match="changed its input `x`"):
        check_correctness(ch02.TRANSPOSE, zeroes_x, sizes=[(4, 5)], trials=1, device="cpu", verbose=False)


def test_speed_is_measured_against_the_faster_torch_transposed_copy():
    result = measure_speed(ch02.TRANSPOSE, torch_transpose, "2", device="cpu", backend=CPUBackend(0.005),
                           size=(64, 48))
    names = {"out.copy_(x.t())", "x.t().contiguous()"}
    assert result.baseline_name in names and set(result.others) == names - {result.baseline_name}
    assert result.bytes_moved == 8 * 64 * 48 and result.unit == "GB/s" and result.bar == 2.0
    assert "64×48" in result.report()


def test_timing_shape_is_8192_squared_and_shrinks_to_fit(monkeypatch):
    monkeypatch.setattr(ch02, "free_gpu_bytes", lambda: 140 * 2**30)
    assert ch02._timing_shape() == (8192, 8192)
    monkeypatch.setattr(ch02, "free_gpu_bytes", lambda: 3 * 2**30)
    rows, cols = ch02._timing_shape()
    assert rows * cols * ch02._CHECK_BYTES_PER_ELEMENT <= 0.8 * 3 * 2**30 and rows * cols >= 1 << 22
    assert (rows, cols) in {(4096, 4096), (4096, 8192)}


def test_speed_check_first_checks_a_non_square_shape(monkeypatch):
    seen = []

    def fake_correctness(ex, fn, sizes, trials, verbose=True):
        seen.append(list(sizes))
        raise CheckFailed("stop here")

    monkeypatch.setattr(ch02, "check_correctness", fake_correctness)
    with pytest.raises(CheckFailed, match="stop here"):
        ch02.check_transpose_speed(torch_transpose)
    assert seen and all(r != c for r, c in seen[0])


def test_bars():
    graded, stretch = bar_for("2"), bar_for("2-stretch")
    assert graded.bar == 2.0 and graded.graded
    assert not stretch.graded and stretch.bar > graded.bar
    assert set(ch02.BAR_KEYS) == {"2", "2-stretch"}


# ------------------------------------------------------------------------ predictions

def _stub(*args):
    raise NotImplementedError()


def test_sectors_check_accepts_the_right_count(capsys):
    ch02.check_sectors(lambda stride, elem: len({k * stride * elem // 32 for k in range(32)}))
    assert "✓ 2.0" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    # ignores the element size: right for floats, wrong for 2-byte elements
    (lambda stride, elem: min(32, 4 * stride) if stride else 1, r"sectors_per_warp\(1, 2\) \(hint.*\) = 4, expected 2"),
    # counts the bytes spanned, not the sectors touched: wrong once each thread has a sector of its own
    (lambda stride, elem: stride * elem, r"sectors_per_warp\(32, 4\) \(hint.*\) = 128, expected 32"),
    (lambda stride, elem: "four", "should return a number"),
])
def test_sectors_check_rejects_wrong_counts(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        ch02.check_sectors(wrong)


def test_predictions_not_written_yet_say_so():
    with pytest.raises(NotImplementedYet, match="exercise 2.0 is not written yet"):
        ch02.check_sectors(_stub)
    with pytest.raises(NotImplementedYet, match="exercise 2.1 is not written yet"):
        ch02.check_napkin_math(_stub, _stub)
    with pytest.raises(NotImplementedYet, match="exercise 2.2 is not written yet"):
        ch02.check_bank_conflicts(_stub)


def test_transpose_napkin_accepts_right_and_rejects_reads_only_and_seconds(capsys):
    ch02.check_napkin_math(lambda r, c: 8 * r * c, lambda r, c, g: 8 * r * c / (g * 1e9) * 1e3)
    assert "✓ 2.1" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"transpose_bytes\(8192, 8192\) \(hint.*\) = 268435456, expected 536870912"):
        ch02.check_napkin_math(lambda r, c: 4 * r * c, lambda r, c, g: 1.0)
    with pytest.raises(CheckFailed, match=r"transpose_floor_ms\(8192, 8192, 3000.0\).*milliseconds"):
        ch02.check_napkin_math(lambda r, c: 8 * r * c, lambda r, c, g: 8 * r * c / (g * 1e9))


def test_bank_conflicts_accepts_gcd_and_rejects_the_multiple_of_32_rule(capsys):
    ch02.check_bank_conflicts(lambda w: math.gcd(w, 32))
    assert "✓ 2.2" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"bank_conflict_ways\(34\) \(hint.*\) = 1, expected 2"):
        ch02.check_bank_conflicts(lambda w: 32 if w % 32 == 0 else 1)


def test_sector_model():
    assert [ch02.expected_sectors(s, 4) for s in (0, 1, 2, 3, 4, 8, 64)] == [1, 4, 8, 12, 16, 32, 32]
    assert ch02.expected_sectors(1, 16) == 16 and ch02.expected_sectors(1, 2) == 2
    assert ch02.predicted_stride_gbps(4, 3000.0) == pytest.approx(3000.0)
    assert ch02.predicted_stride_gbps(32, 3000.0) == pytest.approx(3000.0 * 2 / 9)


# ------------------------------------------------------------------------ experiment and plots

@pytest.fixture
def fake_gpu(monkeypatch):
    """Let the GPU-only helpers run on the CPU: a GPU 'found', a made-up ceiling, little memory."""
    import matplotlib
    matplotlib.use("Agg")
    monkeypatch.setattr(ch02, "gpu_or_reason", lambda: (True, ""))
    monkeypatch.setattr(ch02, "ceilings", lambda: SimpleNamespace(copy_gbps=3000.0))
    monkeypatch.setattr(ch02, "free_gpu_bytes", lambda: 2**24)


def test_stride_experiment_measures_checks_and_predicts(fake_gpu, capsys):
    def strided_copy(src, dst, stride):
        dst.copy_(src[::stride][:dst.numel()])

    fig = ch02.plot_bandwidth_vs_stride(strided_copy, lambda s, e: ch02.expected_sectors(s, e), strides=(1, 2, 8),
                                        device="cpu")
    out = capsys.readouterr().out
    assert fig is not None and len(fig.axes[0].lines) == 3  # measured, predicted, ceiling
    assert "predicted GB/s" in out and "     8            32" in out


def test_stride_experiment_without_prediction_and_with_a_wrong_copy(fake_gpu, capsys):
    fig = ch02.plot_bandwidth_vs_stride(lambda s, d, k: d.copy_(s[::k][:d.numel()]), _stub, strides=(1, 4),
                                        device="cpu")
    assert fig is not None and "sectors_per_warp is not written yet" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"did not copy src\[i \* 2\]"):
        ch02.plot_bandwidth_vs_stride(lambda s, d, k: d.copy_(s[:d.numel()]), strides=(1, 2), device="cpu")


def test_gpu_helpers_without_a_gpu_print_and_return_none(monkeypatch, capsys):
    import grader.harness.exercise as exercise
    monkeypatch.setattr(exercise, "gpu_or_reason", lambda: (False, "no GPU found (test)"))
    monkeypatch.setattr(ch02, "gpu_or_reason", lambda: (False, "no GPU found (test)"))
    assert ch02.plot_bandwidth_vs_stride(torch_transpose) is None
    assert ch02.measure_transpose(torch_transpose, "naive") is None
    assert ch02.check_transpose_stretch(torch_transpose) is None
    out = capsys.readouterr().out
    assert "nothing to measure here" in out and "naive: not measured" in out and "no GPU found" in out


def test_versions_not_written_yet_do_not_stop_run_all(capsys):
    def stub(x, out):
        raise NotImplementedError()

    assert ch02.measure_transpose(stub, "tile without padding") is None
    assert ch02.check_transpose_stretch(stub) is None
    out = capsys.readouterr().out
    assert "tile without padding: not written yet" in out and "Stretch goal not attempted yet" in out


def test_ladder_plot_draws_each_version_and_both_torch_copies(capsys):
    import matplotlib
    matplotlib.use("Agg")
    r = measure_speed(ch02.TRANSPOSE, torch_transpose, "2", device="cpu", backend=CPUBackend(0.005), size=(64, 48))
    fig = ch02.plot_ladder({"naive": r, "tile, no padding": None, "padded": r})
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[:2] == ["naive", "padded"] and set(labels[2:]) == {"out.copy_(x.t())", "x.t().contiguous()"}
    assert ch02.plot_ladder({"naive": None}) is None
    assert "Nothing to plot yet" in capsys.readouterr().out


def test_figures_script_draws_every_figure():
    import matplotlib
    matplotlib.use("Agg")
    spec = importlib.util.spec_from_file_location("make_ch02_figures", ROOT / "assets/figures/make_ch02_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import matplotlib.pyplot as plt
    for draw in (module.draw_sectors, module.draw_transpose, module.draw_tile, module.draw_banks):
        plt.close(draw())
    text = SOLUTION.read_text()
    for name in ("ch02_sectors", "ch02_transpose", "ch02_tile", "ch02_banks"):
        assert (ROOT / f"assets/figures/{name}.png").is_file() and f"attachment:{name}.png" in text


# ------------------------------------------------------------------------ notebooks and students

def _graded(nb_path):
    nb = json.loads(nb_path.read_text())
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"].get("points")
            for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")}


def test_solution_notebook_grades_ten_points():
    assert _graded(SOLUTION) == {"sectors-test": 1, "napkin-test": 1, "banks-test": 1, "transpose-visible": 2,
                                 "transpose-hidden": 2, "transpose-speed": 2, "diagnose-test": 1}


@pytest.mark.parametrize("options, tile_bytes, loads", [
    ((), 32 * 33 * 4, 4),                      # the graded kernel: padded, 4 rows per thread, unrolled
    (("-DPAD=0",), 32 * 32 * 4, 4),            # what the "no padding" cell measures
    (("-DBLOCK_ROWS=32",), 32 * 33 * 4, 1),    # what the "one element per thread" cell measures
])
def test_the_ingredient_cells_compile_the_variants_they_claim(options, tile_bytes, loads):
    src = dict(cuda_sources(SOLUTION)[0])["TRANSPOSE_SRC"]
    (compiled,) = compile_for_archs(src, "transpose_tiled", ("sm_90",), options=options)
    assert f"tile[{tile_bytes}]" in compiled.ptx
    # The loop is unrolled: all of a thread's loads are separate instructions, issued back to back.
    assert compiled.ptx.count("ld.global") == loads and compiled.ptx.count("st.global") == loads


def test_the_stretch_kernel_moves_16_bytes_per_instruction():
    src = dict(cuda_sources(SOLUTION)[0])["TRANSPOSE_WIDE_SRC"]
    (compiled,) = compile_for_archs(src, "transpose_wide", ("sm_90",))
    assert "ld.global.v4.f32" in compiled.ptx and "st.global.v4.f32" in compiled.ptx


STUDENTS = ("correct", "stub", "naive", "unpadded_tile", "one_per_thread_tile", "wrong")


@pytest.mark.parametrize("name", STUDENTS)
def test_every_student_builds_and_its_own_kernels_compile(name, tmp_path):
    import re
    shipped = dict(cuda_sources(SOLUTION)[0])
    sources, stray = cuda_sources(build("ch02", "02_coalescing", name, tmp_path / f"{name}.ipynb"))
    assert not stray and {k for k, _ in sources} == set(shipped)
    for kernel, src in sources:
        if name == "stub" and kernel in ("TRANSPOSE_SRC", "TRANSPOSE_WIDE_SRC"):
            assert is_stub(src)
        elif src != shipped[kernel]:  # the solution's own kernels are compiled by test_nvrtc.py
            (function,) = re.findall(r"void\s+(\w+)\s*\(", src)
            assert compile_for_archs(src, function, ("sm_90",))


def _check_json(*notebooks):
    return {nb["path"]: nb for nb in ladder_check(*notebooks)[1]["notebooks"]}


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["02_coalescing"], indirect=True)
def test_notebooks_on_a_cpu(tmp_path, graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py); the released
    notebook and a wrong student through `ladder check`.
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    wrong = build("ch02", "02_coalescing", "wrong", tmp_path / "wrong.ipynb")
    reports = _check_json(RELEASED, wrong)
    released, student = reports[str(RELEASED)], reports[str(wrong)]
    _, solution, cells = graded_solution.as_check()

    predictions = ("sectors-test", "napkin-test", "banks-test")
    assert all(cells[g]["passed"] for g in predictions)
    for gid in ("transpose-visible", "transpose-hidden", "transpose-speed"):
        c = cells[gid]
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NoGPUError", c
        assert "no GPU found" in c["error"]["evalue"] and "compile for sm_80 and sm_90" in c["error"]["evalue"]
        assert "Traceback" not in c["error"]["evalue"]
    assert solution["score"] == 4 and solution["max_score"] == 10   # with the diagnosis and solution["error"] is None

    assert released["score"] == 0 and released["cells"]
    for c in released["cells"]:
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]

    cells = cells_by_id(student)
    assert cells["sectors-test"]["passed"] and cells["diagnose-test"]["passed"] and student["score"] == 2
    assert "transpose_bytes(8192, 8192) (hint" in cells["napkin-test"]["error"]["evalue"]
    assert "= 1, expected 2" in cells["banks-test"]["error"]["evalue"]


# ------------------------------------------------------------------------ on a GPU

@pytest.fixture(scope="module")
def gpu_reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ch02")
    built = {name: build("ch02", "02_coalescing", name, tmp / f"{name}.ipynb") for name in STUDENTS if name != "correct"}
    reports = _check_json(SOLUTION, *built.values())
    return {"correct": cells_by_id(reports[str(SOLUTION)]), **{n: cells_by_id(reports[str(p)]) for n, p in built.items()}}


@pytest.mark.gpu
@pytest.mark.slow
def test_solution_passes_every_graded_cell_on_a_gpu(gpu_reports):
    cells = gpu_reports["correct"]
    assert all(c["outcome"] == "pass" for c in cells.values()), {g: c["error"] for g, c in cells.items()}


@pytest.mark.gpu
@pytest.mark.slow
def test_stub_fails_every_graded_cell_with_not_implemented_on_a_gpu(gpu_reports):
    for c in gpu_reports["stub"].values():
        assert c["error"] and c["error"]["ename"] == "NotImplementedYet", c


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("name", ["naive", "unpadded_tile", "one_per_thread_tile"])
def test_previous_rungs_are_correct_but_below_the_bar(gpu_reports, name):
    cells = gpu_reports[name]
    assert cells["transpose-visible"]["passed"] and cells["transpose-hidden"]["passed"]
    speed = cells["transpose-speed"]
    assert not speed["passed"] and "below the bar" in speed["error"]["evalue"], speed


@pytest.mark.gpu
@pytest.mark.slow
def test_wrong_student_earns_only_the_sectors_and_diagnosis_points_on_a_gpu(gpu_reports):
    cells = gpu_reports["wrong"]
    # the diagnosis is the solution's, which the wrong student leaves alone (as on a CPU, above)
    assert {g for g, c in cells.items() if c["passed"]} == {"sectors-test", "diagnose-test"}
    assert "wrong result" in cells["transpose-visible"]["error"]["evalue"]
