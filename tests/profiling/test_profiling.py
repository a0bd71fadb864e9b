"""The profiler's reading, signatures, recorded rungs, roofline and failure messages, on recorded
Nsight Compute reports (assets/profiles/H100/, recorded on an H100 by `assets/results/gpu_measure.sh profiles`, and
assets/profiles/H200/), plus one GPU test that profiles a solution notebook for real."""

import math
import os
import stat
import subprocess
import sys

import pytest
from conftest import HAS_GPU, ROOT

from grader.profiling import ncu
from grader.profiles import recorded
from grader.profiles.report import read_raw_csv
from grader.profiles.signature import signature_from_rows, signature_of

PROBE = ROOT / "assets/results/profiles/probe-h100"


def test_every_recorded_rung_reads_back_with_its_kernel_and_gpu():
    """Every folder of assets/profiles/ (the H100's, and the H200's for chapter 9 and some diagnose cases): each
    rung was profiled on the GPU its folder names."""
    folders = [gpu for gpu in recorded.GPUS if recorded.available(gpu)]
    assert folders == list(recorded.GPUS), folders
    for gpu in folders:
        for exercise in recorded.exercises(gpu):
            assert recorded.rungs(exercise, gpu), exercise
            for rung in recorded.rungs(exercise, gpu):
                sig = recorded.load(exercise, rung, gpu)
                assert sig.gpu.startswith(f"NVIDIA {gpu}") and sig.time_us > 0 and sig.kernel, (gpu, exercise, rung)
                assert recorded.describe(exercise, rung, gpu)


def test_recorded_signatures_separate_the_rungs_the_course_names():
    ways = {r: recorded.load("2", r).shared_ld_ways for r in ("unpadded_tile", "solution")}
    assert 28 <= ways["unpadded_tile"] <= 33 and 0.9 <= ways["solution"] <= 1.5, ways
    assert recorded.load("2", "naive").st_sectors_per_request == pytest.approx(32, abs=0.5)
    assert recorded.load("1a", "float4").dram_pct >= 85
    assert recorded.load("4", "fma_only").tensor_pipe_pct < 1
    assert recorded.load("4", "solution").tensor_pipe_pct > 10
    assert recorded.load("3", "naive_uncoalesced").ld_sectors_per_request > 8 > recorded.load("3", "solution").ld_sectors_per_request
    assert recorded.load("6", "naive_triton").dram_pct > 5 * recorded.load("6", "solution").dram_pct


def test_raw_csv_around_program_output_and_thousands_separators():
    rows = read_raw_csv((PROBE / "nvtx_filtered_raw.csv").read_text())   # ==PROF== lines and "ran" around it
    assert [r.name for r in rows if r.name.startswith("ladder_")] == [
        "ladder_vadd", "ladder_transpose_naive", "ladder_transpose_tile", "ladder_mm"]
    tile = next(r for r in read_raw_csv((PROBE / "probe_raw.csv").read_text()) if r.name == "ladder_transpose_tile")
    assert tile.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") == 16342178   # "16,342,178"
    assert tile.get("gpu__time_duration.sum") == pytest.approx(128.768)                      # us
    assert tile.grid == (128, 128, 1) and tile.block == (32, 32, 1)
    with pytest.raises(ValueError, match="no Nsight Compute raw CSV"):
        read_raw_csv("==PROF== No kernels were profiled.\n")


def test_missing_metrics_read_as_nan_never_zero():
    rows = read_raw_csv((PROBE / "probe_raw.csv").read_text())   # recorded without the extra --metrics
    sig = signature_of(rows[0])
    assert math.isnan(sig.l2_hit_pct) and math.isnan(sig.fp32_flops)
    assert "L2 hit rate n/a" in sig.summary()


def test_limiter_is_the_fewest_blocks_per_sm_and_ldmatrix_is_not_a_bank_conflict():
    mm = signature_from_rows([r for r in read_raw_csv((PROBE / "probe_raw.csv").read_text()) if r.name == "ladder_mm"])
    # at 168 registers a thread, the register file and shared memory each allow the same one block: both named
    assert mm.occupancy_limiter == "registers, shared memory" and mm.registers_per_thread == 168
    # 7a's softmax, 1,024 threads at 22 registers: two blocks by the register file and two by warps
    assert recorded.load("7a", "solution").occupancy_limiter == "registers, warps"
    naive_5a = recorded.load("5a", "naive")    # Triton's ldmatrix: wavefronts without LDS instructions
    assert math.isnan(naive_5a.shared_ld_ways)
    stalls = dict(recorded.load("2", "naive").top_stalls)
    assert "selected" not in stalls and recorded.load("2", "naive").top_stalls[0][1] == max(stalls.values())


def test_roofline_draws_every_rung_and_the_learners_point():
    import matplotlib
    matplotlib.use("Agg")
    from grader.profiling import _roofline
    fig = _roofline("3", recorded.load("3", "smem_tile_32"), recorded.index()["exercises"]["3"]["flops"])
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert "yours" in labels and all(r in labels for r in recorded.rungs("3"))


@pytest.fixture
def gpu_present(monkeypatch):
    """The failure paths past the GPU check, on a machine without one."""
    from grader.cuda import gpu
    monkeypatch.setattr(gpu, "gpu_or_reason", lambda: (True, ""))
    # On a machine without a GPU the course turns the Triton interpreter on (grader.harness.session), and
    # other tests in this process may have: these tests stand for a GPU machine, where it is off.
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def _fake_ncu(tmp_path, monkeypatch, script: str):
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu, "find_ncu", lambda: str(exe))


def test_counters_not_permitted_says_how_an_administrator_enables_them(tmp_path, monkeypatch, gpu_present):
    _fake_ncu(tmp_path, monkeypatch, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1\n')
    with pytest.raises(ncu.ProfileUnavailable) as info:
        ncu.profile_notebook(ROOT / "solutions/02_coalescing/02_coalescing.ipynb", "2", out_dir=tmp_path / "o")
    assert "NVreg_RestrictProfilingToAdminUsers=0" in str(info.value) and "Traceback" not in str(info.value)


def test_no_kernel_profiled_and_ncu_timeout_say_what_to_do(tmp_path, monkeypatch, gpu_present):
    _fake_ncu(tmp_path, monkeypatch, 'echo "==PROF== No kernels were profiled."; exit 0\n')
    with pytest.raises(ncu.ProfileUnavailable, match="launched nothing on the GPU"):
        ncu.profile_notebook(ROOT / "solutions/02_coalescing/02_coalescing.ipynb", "2", out_dir=tmp_path / "o")
    _fake_ncu(tmp_path, monkeypatch, "sleep 5\n")
    with pytest.raises(ncu.ProfileUnavailable, match="Profile a smaller size"):
        ncu.profile_notebook(ROOT / "solutions/02_coalescing/02_coalescing.ipynb", "2", out_dir=tmp_path / "o",
                             timeout_s=0.5)


def test_no_ncu_and_the_triton_interpreter_are_named(monkeypatch, gpu_present):
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    assert "Nsight Compute (`ncu`) is not installed" in ncu.unavailable_reason()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "TRITON_INTERPRET=1" in ncu.unavailable_reason()


def test_the_target_names_an_exercise_the_chapter_lacks():
    from grader.profiling.target import plan_for
    assert plan_for("ch06", "6-causal").trailing == (True,)
    assert plan_for("ch02", "2", "transpose_wide").stretch
    with pytest.raises(LookupError, match="has no exercise '9'; it has 2"):
        plan_for("ch02", "9")


@pytest.mark.skipif(HAS_GPU, reason="the CPU path: on a GPU the notebook is profiled")
def test_notebook_one_liner_without_a_gpu_shows_the_recorded_rungs(capsys):
    import matplotlib
    matplotlib.use("Agg")
    from grader.profiling import profile
    fig = profile("2", notebook=ROOT / "solutions/02_coalescing/02_coalescing.ipynb")
    out, err = capsys.readouterr()
    assert "Not profiled here: no GPU found" in out and "| unpadded_tile | " in out and err == ""
    assert fig is not None


@pytest.mark.skipif(HAS_GPU, reason="the CPU path")
def test_cli_without_a_gpu_and_with_a_missing_notebook():
    run = lambda *a: subprocess.run([sys.executable, "-m", "grader.cli", "profile", *a], capture_output=True,
                                    text=True, check=False, cwd=ROOT, env={**os.environ, "LADDER_FORCE_NO_GPU": "1"})
    done = run("solutions/02_coalescing/02_coalescing.ipynb", "--exercise", "2")
    assert done.returncode == 2 and "Not profiled" in done.stdout and "| solution |" in done.stdout
    missing = run("no/such.ipynb", "--exercise", "2")
    assert missing.returncode != 0 and "no/such.ipynb: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.gpu
def test_ladder_profile_on_the_solution_transpose(tmp_path):
    if not HAS_GPU:
        pytest.skip("needs an NVIDIA GPU")
    if ncu.unavailable_reason():
        pytest.skip(ncu.unavailable_reason())
    prof = ncu.profile_notebook(ROOT / "solutions/02_coalescing/02_coalescing.ipynb", "2", out_dir=tmp_path)
    assert prof.main.shared_ld_ways < 1.5 and prof.main.st_sectors_per_request <= 4.5
    assert prof.rep_path.is_file() and prof.target["size"]


@pytest.mark.skipif(HAS_GPU, reason="the CPU path")
def test_one_liner_for_an_exercise_with_no_recording_says_so(capsys):
    from grader.profiling import profile
    assert profile("9z", notebook=ROOT / "solutions/02_coalescing/02_coalescing.ipynb") is None
    out, err = capsys.readouterr()
    assert "No recorded rungs to compare with" in out and "9z" in out and err == ""
