"""`ladder check --sanitize`: the command line and environment, the log parser, the mapping back to
the learner's lines, the messages without a GPU or a sanitizer, and the runner on every chapter.

GPU tests (marked `gpu`) run compute-sanitizer for real: chapter 1's solution is clean under
memcheck, an unguarded vector add is caught by memcheck, and a tiled SGEMM missing a
`__syncthreads()` is caught by racecheck."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import chapters, cli
from grader.errors import LadderError
from grader.learner.cells import chapter_of
from grader.sanitizer import report as sanitize
from grader.sanitizer import runner
from grader.sanitizer.logs import parse_location, parse_log, short_name
from grader.sanitizer.report import ERROR_EXITCODE, TOOLS, build_command, interpret, sanitize_env
from grader.sanitizer.runner import learner_cells
from submissions import build

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
TRITON_CHAPTERS = ("ch05", "ch06", "ch08", "ch09", "ch10")   # their kernels are Triton's: the interpreter runs them without a GPU
MIXED_CHAPTERS = ("ch07",)   # CUDA C (7a) and Triton (7b, 7c): exercises with CPU sizes run in the interpreter


# ------------------------------------------------------------------ representative sanitizer logs

# memcheck, CUDA 12 style, on the unguarded vector add (tests/submissions/sanitize/unguarded_add.py):
# the kernel's line 6 is `out[i] = a[i] + b[i];`.
MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at vector_add+0xb0 in /home/learner/course/01_vector_add/vector_add.cu:6
=========     by thread (256,0,0) in block (3,0,0)
=========     Access at 0x7f3a9e000fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a9e000000 of size 4000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f0f2f] in libcuda.so.1
=========         Host Frame: cupy_backends.cuda.api.driver.launchKernel [0x4d81a] in driver.cpython-311-x86_64-linux-gnu.so
=========
========= Invalid __global__ write of size 4 bytes
=========     at vector_add+0xb0 in /home/learner/course/01_vector_add/vector_add.cu:6
=========     by thread (257,0,0) in block (3,0,0)
=========     Access at 0x7f3a9e000fa4 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7f3a9e000000 of size 4000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f0f2f] in libcuda.so.1
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaStreamSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x2f0f2f] in libcuda.so.1
=========
========= Target application returned an error
========= ERROR SUMMARY: 25 errors
"""

# memcheck, the older layout ("at 0xOFFSET in FILE:LINE:KERNEL", sizes without "bytes").
MEMCHECK_OLD_LOG = """\
========= CUDA-MEMCHECK
========= Invalid __global__ read of size 4
=========     at 0x00000090 in /tmp/build/vector_add.cu:6:vector_add
=========     by thread (31,0,0) in block (0,0,0)
=========     Address 0x7f1500000400 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame:/lib64/libcuda.so.1 (cuLaunchKernel + 0x34e) [0x2d725e]
=========
========= ERROR SUMMARY: 1 error
"""

# memcheck in a header function (WMMA), with the learner's kernel as an outer device frame.
MEMCHECK_FRAMES_LOG = """\
========= Invalid __shared__ read of size 16 bytes
=========     at void nvcuda::wmma::load_matrix_sync<half>(nvcuda::wmma::fragment<int> &, const __half *, unsigned int)+0x1f0 in /usr/local/cuda/include/crt/mma.hpp:170
=========     by thread (5,0,0) in block (0,0,0)
=========     Address 0x1c40 is out of bounds
=========         Device Frame: wmma_gemm+0x870 in /tmp/wmma_gemm.cu:7
=========     Saved host backtrace up to driver entry point at kernel launch time
=========
========= ERROR SUMMARY: 1 error
"""

# racecheck, analysis mode (its default), on the SGEMM without the second __syncthreads()
# (tests/submissions/sanitize/sgemm_no_sync.py): line 13 stores the A tile, line 17 reads it.
RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sgemm_tiled+0x1f0 in /work/03_tiling/sgemm_tiled.cu:13
=========     and Read access at sgemm_tiled+0x2c0 in /work/03_tiling/sgemm_tiled.cu:17 [992 hazards]
=========     and Read access at sgemm_tiled+0x2e0 in /work/03_tiling/sgemm_tiled.cu:17 [32 hazards]
=========
========= Warning: Race reported between Read access at sgemm_tiled+0x300 in /work/03_tiling/sgemm_tiled.cu:17
=========     and Write access at sgemm_tiled+0x210 in /work/03_tiling/sgemm_tiled.cu:14 [8 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

# racecheck, hazard mode, older layout.
RACECHECK_HAZARD_LOG = """\
========= ERROR: Potential WAR hazard detected at __shared__ 0x100 in block (1,2,0) :
=========     Read Thread (3,1,0) at 0x000002c0 in /tmp/sgemm_tiled.cu:17:sgemm_tiled
=========     Write Thread (4,9,0) at 0x000001f0 in /tmp/sgemm_tiled.cu:13:sgemm_tiled
=========     Current Value : 0, Incoming Value : 1065353216
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

# synccheck: a __syncthreads() inside `if (threadIdx.x < 32)`.
SYNCCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at block_sum+0x1c0 in /tmp/block_sum.cu:9
=========     by thread (37,0,0) in block (0,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f0f2f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
"""

# A clean run in which the libraries' own probing shows up as failed (but handled) CUDA calls.
CLEAN_WITH_API_NOISE_LOG = """\
========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_NOT_FOUND (error 500) due to "named symbol not found" on CUDA API call to cuGetProcAddress.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x2f0f2f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
"""


# ------------------------------------------------------------------------- the command and env

@pytest.mark.parametrize("tool", TOOLS)
def test_command_line_for_each_tool(tool, tmp_path):
    nb, report, log = tmp_path / "nb.ipynb", tmp_path / "r.json", tmp_path / "s.log"
    cmd = build_command(tool, "/opt/cuda/bin/compute-sanitizer", nb, report, log, python="/venv/bin/python")
    assert cmd[0] == "/opt/cuda/bin/compute-sanitizer"
    assert cmd[cmd.index("--tool") + 1] == tool
    assert cmd[cmd.index("--log-file") + 1] == str(log)
    assert cmd[cmd.index("--error-exitcode") + 1] == str(ERROR_EXITCODE)
    assert int(cmd[cmd.index("--print-limit") + 1]) > 0
    assert cmd[cmd.index("--leak-check") + 1] == "no"
    assert ("--padding" in cmd) == (tool == "memcheck")
    # The sanitizer's options come first, then the one process it wraps: the runner on the notebook.
    assert cmd[-6:] == ["/venv/bin/python", "-m", "grader.sanitizer.runner", str(nb), "--report", str(report)]


def test_unknown_tool_is_refused(tmp_path):
    with pytest.raises(LadderError, match="unknown sanitizer tool"):
        build_command("initcheck-typo", "cs", tmp_path / "nb.ipynb", tmp_path / "r", tmp_path / "l")


def test_env_turns_caching_allocators_off_and_triton_onto_the_gpu(tmp_path):
    base = {"PATH": "/usr/bin", "TRITON_INTERPRET": "1", "TRITON_DISABLE_LINE_INFO": "1", "PYTHONPATH": "/x",
            "LADDER_FORCE_NO_GPU": "1"}
    env = sanitize_env(tmp_path / "triton", base)
    assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert env["CUDA_LAUNCH_BLOCKING"] == "1"
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "triton")
    assert "TRITON_INTERPRET" not in env and "TRITON_DISABLE_LINE_INFO" not in env
    assert "LADDER_FORCE_NO_GPU" not in env
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/x"]
    assert env["PATH"] == "/usr/bin" and base["TRITON_INTERPRET"] == "1"   # the caller's dict is untouched


def test_runner_turns_cupy_pools_off(monkeypatch):
    cupy = pytest.importorskip("cupy")
    saved = cupy.cuda.get_allocator()
    assert isinstance(getattr(saved, "__self__", None), cupy.cuda.MemoryPool)   # the default: pooled
    monkeypatch.setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "0")
    try:
        runner._allocators_off()
        assert not isinstance(getattr(cupy.cuda.get_allocator(), "__self__", None), cupy.cuda.MemoryPool)
        assert os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    finally:
        cupy.cuda.set_allocator(saved)
        cupy.cuda.set_pinned_memory_allocator(cupy.get_default_pinned_memory_pool().malloc)


def test_runner_compiles_cuda_kernels_with_line_info_and_records_them(tmp_path):
    """CUDA C line numbers come from the runner: each kernel is compiled with -lineinfo (once, however
    often it is launched), its source goes to the report, and the exercise running it names it."""
    from grader.cuda import launches
    from grader.cuda.kernels import load_kernel

    src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }'
    kernel = load_kernel(src, "k", options=("-O3",), where="K_SRC")
    lined = load_kernel(src, "k2", options=("--generate-line-info",))
    report = runner.Report(tmp_path / "r.json", "nb.ipynb")
    report.current = exercise = {"kernels": []}
    ran = []
    handler = runner._watch(report)
    for k in (kernel, kernel, lined):
        assert handler(launches.Launch("cuda", k.name, k, lambda k=k: ran.append(k.name))) is None
    assert ran == ["k", "k", "k2"]                       # each launch still happens
    assert kernel.options == ("-O3", "-lineinfo")        # added once
    assert lined.options == ("--generate-line-info",)    # already there: not added twice
    assert exercise["kernels"] == ["k", "k2"]
    saved = json.loads((tmp_path / "r.json").read_text())["cuda_kernels"]
    assert saved["k"] == {"file": "k.cu", "where": "K_SRC", "source": src}
    assert set(saved) == {"k", "k2"}


def test_default_tools_per_chapter():
    assert sanitize.tools_for("ch01") == TOOLS
    assert sanitize.tools_for("ch03") == TOOLS
    assert sanitize.tools_for("ch05") == ("memcheck",)     # Triton places its own barriers
    assert sanitize.tools_for("ch06") == ("memcheck",)
    assert sanitize.tools_for("ch06", ["racecheck", "racecheck"]) == ("racecheck",)
    assert sanitize.tools_for(None) == sanitize.tools_for("ch99") == TOOLS


def test_finds_the_sanitizer_in_cuda_home(tmp_path):
    """In a fresh process, as `ladder check --sanitize` runs: cuda-pathfinder (grader.cuda.toolkit) reads
    CUDA_HOME once per process and keeps it, so a variable set in this one would not be seen."""
    fake = tmp_path / "cuda" / "bin" / "compute-sanitizer"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=str(tmp_path / "empty"), CUDA_HOME=str(tmp_path / "cuda"), PYTHONPATH=str(ROOT))
    for name in ("CUDA_PATH", "CONDA_PREFIX"):
        env.pop(name, None)
    probe = ("import json; from grader.cuda.toolkit import tool_paths; from grader.sanitizer.report import "
             "find_sanitizer; print(json.dumps([find_sanitizer(), tool_paths('compute-sanitizer')]))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    found, every = json.loads(proc.stdout.strip().splitlines()[-1])
    assert str(fake) in every and found == every[0]
    # NVIDIA's pip wheel, where one is installed, is looked at before CUDA_HOME; otherwise CUDA_HOME wins.
    wheels = [p for p in every if "-packages" in p]
    assert found == (wheels[0] if wheels else str(fake))


# ---------------------------------------------------------------------------------- the parser

@pytest.mark.parametrize("text, function, file, line", [
    ("vector_add+0xb0 in /a/b/vector_add.cu:6", "vector_add", "/a/b/vector_add.cu", 6),
    ("col_kernel(const unsigned int *, float)+0x490", "col_kernel(const unsigned int *, float)", None, None),
    ("0x00000090 in /tmp/vector_add.cu:6:vector_add", "vector_add", "/tmp/vector_add.cu", 6),
    ("0x3b0 in void kern<int>(int*)", "void kern<int>(int*)", None, None),
    ("sgemm_tiled+0x2c0 in sgemm_tiled.cu:17 [992 hazards]", "sgemm_tiled", "sgemm_tiled.cu", 17),
])
def test_parse_location(text, function, file, line):
    loc = parse_location(text)
    assert (loc.function, loc.file, loc.line) == (function, file, line)


@pytest.mark.parametrize("name, short", [
    ("vector_add", "vector_add"),
    ("void ns::kern<float, (int)4>(float *, int)", "kern"),
    ("col_kernel(const unsigned int *, unsigned int *)", "col_kernel"),
])
def test_short_kernel_names(name, short):
    assert short_name(name) == short


def test_memcheck_report():
    parsed = parse_log(MEMCHECK_LOG, "memcheck")
    assert parsed.error_summary == 25
    memory = [f for f in parsed.findings if f.category == "memory"]
    api = [f for f in parsed.findings if f.category == "api"]
    assert len(memory) == 2 and len(api) == 1
    f = memory[0]
    assert f.kind == "Invalid __global__ write of size 4 bytes" and f.severity == "error" and f.failing
    assert f.kernel == "vector_add"
    assert (f.locations[0].file, f.locations[0].line) == ("/home/learner/course/01_vector_add/vector_add.cu", 6)
    assert (f.thread, f.block) == ("256,0,0", "3,0,0")
    assert any("out of bounds" in d for d in f.details)
    assert not api[0].failing and "cudaErrorLaunchFailure" in api[0].kind
    assert any("Target application returned an error" in n for n in parsed.notes)


def test_memcheck_report_older_layout():
    (f,) = parse_log(MEMCHECK_OLD_LOG, "memcheck").findings
    assert f.kind == "Invalid __global__ read of size 4" and f.kernel == "vector_add"
    assert (f.locations[0].file, f.locations[0].line, f.thread) == ("/tmp/build/vector_add.cu", 6, "31,0,0")


def test_memcheck_error_in_a_header_names_the_kernel_from_the_outer_frame():
    (f,) = parse_log(MEMCHECK_FRAMES_LOG, "memcheck").findings
    assert f.kernel == "wmma_gemm"
    assert [l.line for l in f.locations] == [170, 7]


def test_racecheck_report():
    parsed = parse_log(RACECHECK_LOG, "racecheck")
    assert parsed.hazard_summary == (1, 1)
    error, warning = parsed.findings
    assert error.category == warning.category == "race"
    assert (error.severity, warning.severity) == ("error", "warning")
    assert error.kernel == "sgemm_tiled" and error.count == 1024
    assert error.accesses == ["Write", "Read", "Read"]
    assert [l.line for l in error.locations] == [13, 17, 17]
    assert error.kind == "race between write and read accesses"


def test_racecheck_hazard_mode_report():
    (f,) = parse_log(RACECHECK_HAZARD_LOG, "racecheck").findings
    assert f.kind == "WAR hazard" and f.kernel == "sgemm_tiled" and f.block == "1,2,0"
    assert f.accesses == ["Read", "Write"] and [l.line for l in f.locations] == [17, 13]
    assert f.thread == "3,1,0"


def test_synccheck_report():
    (f,) = parse_log(SYNCCHECK_LOG, "synccheck").findings
    assert f.category == "barrier" and f.failing
    assert f.kind == "Barrier error detected. Divergent thread(s) in block"
    assert (f.kernel, f.locations[0].line, f.thread) == ("block_sum", 9, "37,0,0")


def test_a_failed_cuda_call_alone_is_not_an_error_in_a_kernel():
    run = interpret("memcheck", CLEAN_WITH_API_NOISE_LOG, {"finished": True, "exercises": []}, ERROR_EXITCODE,
                    "", 1.0)
    assert run.status == "clean" and run.passed


def test_a_crash_the_parser_cannot_read_still_fails():
    log = MEMCHECK_LOG.split("========= Program hit")[0].replace("Invalid __global__ write", "Something new")
    # No kernel error in a form we know, no location line: only the failed CUDA call says a kernel crashed.
    log = "\n".join(l for l in log.splitlines() if "Something new" not in l and " at " not in l)
    log += ('\n========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on '
            "CUDA API call to cudaStreamSynchronize.\n========= ERROR SUMMARY: 3 errors\n")
    run = interpret("memcheck", log, {"finished": True, "exercises": []}, ERROR_EXITCODE, "", 1.0)
    assert run.status == "errors" and not run.passed


def test_errors_counted_but_unreadable_are_not_called_clean():
    log = "========= Some future headline nobody parses yet\n========= ERROR SUMMARY: 2 errors\n"
    run = interpret("memcheck", log, {"finished": True, "exercises": []}, ERROR_EXITCODE, "", 1.0)
    assert run.status == "errors"
    assert "could not read" in run.notes[-1]


@pytest.mark.parametrize("manifest, timed_out, status", [
    ({"finished": True}, False, "clean"),
    ({"finished": False}, False, "crashed"),
    ({}, False, "sanitizer-failed"),
    ({"finished": False}, True, "timed-out"),
])
def test_run_status(manifest, timed_out, status):
    run = interpret("memcheck", "========= ERROR SUMMARY: 0 errors\n", manifest, 0, "Traceback: boom\n", 2.0,
                    timed_out=timed_out, timeout_s=30)
    assert run.status == status
    assert run.passed == (status == "clean")
    if timed_out:
        assert "timed out after 30 s" in run.stopped


# ----------------------------------------------------------------- back to the learner's lines

def _runner_report(notebook: Path, tmp_path: Path, *extra: str) -> dict:
    """The runner's report on a notebook, as a machine without a GPU produces it."""
    report = tmp_path / f"{notebook.stem}.json"
    env = dict(os.environ, LADDER_FORCE_NO_GPU="1", PYTHONPATH=str(ROOT))
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-m", "grader.sanitizer.runner", str(notebook), "--report", str(report),
                           *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def unguarded(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("unguarded")
    nb = build.build("sanitize", "01_vector_add", "unguarded_add", tmp / "unguarded_add.ipynb")
    return _runner_report(nb, tmp, "--device", "cpu")


@pytest.fixture(scope="module")
def no_sync(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("no_sync")
    nb = build.build("sanitize", "03_tiling", "sgemm_no_sync", tmp / "sgemm_no_sync.ipynb")
    return _runner_report(nb, tmp, "--device", "cpu")


def test_memcheck_error_maps_to_the_line_in_the_kernel_string(unguarded):
    run = interpret("memcheck", MEMCHECK_LOG, unguarded, ERROR_EXITCODE, "", 12.0)
    assert run.status == "errors" and not run.passed
    (f,) = [f for f in run.findings if f.failing]          # the two writes are one problem
    assert f.count == 2 and f.kernel == "vector_add"
    assert f.code == "out[i] = a[i] + b[i];"
    assert f.where == "VECTOR_ADD_SRC line 6 (cell 'vector-add-solution', line 7)"
    assert f.exercises == ["1a vector add"]       # the exercise whose launcher launched `vector_add`
    text = "\n".join(sanitize.format_tool(run))
    assert "(kernel `vector_add`, 2 reports)" in text and "out[i] = a[i] + b[i];" in text and "line 7" in text


def test_race_maps_both_accesses(no_sync):
    run = interpret("racecheck", RACECHECK_LOG, no_sync, ERROR_EXITCODE, "", 30.0)
    error = run.findings[0]
    assert error.kernel == "sgemm_tiled"
    assert [(s["access"], s["line"]) for s in error.sites] == [("write", 13), ("read", 17), ("read", 17)]
    assert error.sites[0]["code"].startswith("As[ty][tx] = ")
    assert error.sites[1]["code"] == "acc += As[ty][k] * Bs[k][tx];"
    assert error.sites[0]["where"] == "SGEMM_SRC line 13 (cell 'sgemm-solution', line 14)"
    text = "\n".join(sanitize.format_tool(run))
    assert "write at SGEMM_SRC line 13" in text and "read at SGEMM_SRC line 17" in text


def test_triton_kernel_lines_map_to_the_notebook_cell():
    cell = "import triton\n\n@triton.jit\ndef k(x_ptr, n):\n    i = tl.arange(0, 128)\n    tl.store(x_ptr + i, 1.0)\n"
    manifest = {"finished": True, "cells": [{"file": "ladder_cell27_matmul-solution.py", "grade_id": "matmul-solution",
                                             "outcome": "ok"}],
                "cell_sources": {"ladder_cell27_matmul-solution.py": cell}, "cuda_kernels": {},
                "triton_kernels": {"k": {"file": "ladder_cell27_matmul-solution.py"}},
                "exercises": [{"key": "5a", "title": "fp16 matmul", "kernels": ["k"], "outcome": "failed",
                               "launcher": "matmul", "stretch": False}]}
    log = ("========= Invalid __global__ write of size 4 bytes\n"
           "=========     at k+0x1d0 in /tmp/run/ladder_cell27_matmul-solution.py:6\n"
           "=========     by thread (100,0,0) in block (0,0,0)\n"
           "========= ERROR SUMMARY: 1 error\n")
    (f,) = interpret("memcheck", log, manifest, ERROR_EXITCODE, "", 5.0).findings
    assert f.where == "cell 'matmul-solution', line 6" and f.code == "tl.store(x_ptr + i, 1.0)"
    assert f.exercises == ["5a fp16 matmul"]


# ------------------------------------------------------------------------ no GPU, no sanitizer

def test_no_gpu_says_so_in_one_line(tmp_path):
    env = dict(os.environ, LADDER_FORCE_NO_GPU="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--sanitize", str(SOLUTIONS[0])],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("ladder check: cannot sanitize here: no GPU found")
    assert "What still works here" in line and "ladder check NOTEBOOK" in line


def test_no_sanitizer_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr("grader.cuda.gpu.gpu_or_reason", lambda: (True, ""))
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: None)
    assert cli.main(["check", "--sanitize", str(SOLUTIONS[0])]) == 2
    out = capsys.readouterr()
    (line,) = out.err.strip().splitlines()
    assert "compute-sanitizer was not found" in line and "nvidia-cuda-sanitizer-api" in line
    assert "Traceback" not in out.err + out.out


def test_sanitize_flags_need_sanitize(capsys):
    assert cli.main(["check", "--tool", "racecheck", str(SOLUTIONS[0])]) == 2
    assert "go with --sanitize" in capsys.readouterr().err


def test_summary_and_exit_status(monkeypatch, tmp_path, unguarded):
    """sanitize() end to end, with compute-sanitizer's runs replaced by canned ones."""
    monkeypatch.setattr(sanitize, "unavailable_reason", lambda: None)
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: "/fake/compute-sanitizer")
    monkeypatch.setattr(sanitize, "sanitizer_version", lambda path: "Version 2025.1.0")
    calls = []

    def fake_run_tool(tool, sanitizer, notebook, workdir, env, timeout_s):
        calls.append(tool)
        assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
        log = MEMCHECK_LOG if tool == "memcheck" else "========= ERROR SUMMARY: 0 errors\n"
        return interpret(tool, log, unguarded, ERROR_EXITCODE if tool == "memcheck" else 0, "", 3.0)

    monkeypatch.setattr(sanitize, "run_tool", fake_run_tool)
    nb = build.build("sanitize", "01_vector_add", "unguarded_add", tmp_path / "s.ipynb")
    lines = []
    assert sanitize.sanitize([nb], echo=lines.append) == 1
    assert calls == list(TOOLS)
    text = "\n".join(lines)
    assert "memcheck: 25 errors reported" in text and "racecheck: clean" in text and "PROBLEMS FOUND" in text

    lines.clear()
    assert sanitize.sanitize([nb], tools=["racecheck"], as_json=True, echo=lines.append) == 0
    report = json.loads(lines[-1])
    assert report["schema"] == "kernel-ladder.sanitize/1" and report["passed"] is True
    (notebook,) = report["notebooks"]
    assert [t["tool"] for t in notebook["tools"]] == ["racecheck"] and notebook["tools"][0]["status"] == "clean"
    assert notebook["tools"][0]["reason"] is None

    lines.clear()
    assert sanitize.sanitize([nb], tools=["memcheck"], as_json=True, echo=lines.append) == 1
    (tool,) = json.loads(lines[-1])["notebooks"][0]["tools"]
    assert tool["reason"] == "sanitizer-memcheck" and tool["findings"][0]["kernel"] == "vector_add"


# ------------------------------------------------------------------- the runner, on every chapter

def test_learner_cells_are_setup_then_solutions_in_order():
    nb = json.loads(SOLUTIONS[0].read_text())
    cells = learner_cells(nb)
    assert cells[0][1] == "setup"
    assert [c[0] for c in cells] == sorted(c[0] for c in cells)
    assert {"vector-add-solution", "fused-solution"} <= {c[1] for c in cells}
    assert chapter_of(nb, SOLUTIONS[0]) == "ch01"


def test_plan_names_real_exercises():
    from grader.harness.exercise import Exercise, SmallSizes

    assert chapters.names() == sorted(chapters.names()) and all(len(n) == 4 for n in chapters.names())
    for chapter in chapters.names():
        module = chapters.module(chapter)
        assert module.SANITIZE, chapter
        for step in module.SANITIZE:
            assert isinstance(step, SmallSizes), (chapter, step)
            assert isinstance(step.exercise, Exercise), (chapter, step)
            assert any(step.exercise is v for v in vars(module).values()), (chapter, step)   # the chapter's own
            assert step.launcher.isidentifier() and step.sizes
    # Chapter 6 checks each launcher twice: causal=False for exercise 6 and 6b, causal=True for 6-causal and
    # 6b's causal variant.
    ch06 = chapters.module("ch06")
    assert [(s.exercise, s.launcher, s.trailing) for s in ch06.SANITIZE] == [
        (ch06.ATTENTION, "attention", (False,)), (ch06.CAUSAL, "attention", (True,)),
        (ch06.BACKWARD, "attention_backward", (False,)), (ch06.BACKWARD_CAUSAL, "attention_backward", (True,))]


@pytest.mark.parametrize("notebook", SOLUTIONS, ids=lambda p: p.parent.name)
def test_runner_runs_every_solution_notebook_on_the_cpu(notebook, tmp_path):
    """The setup and solution cells run without error; every launcher the plan names is defined; Triton
    chapters pass every planned check in the interpreter; CUDA C kernels are built with -lineinfo
    (NVRTC compiles them; only running them needs a GPU)."""
    from grader.cuda.nvrtc import nvrtc_available

    report = _runner_report(notebook, tmp_path, "--device", "cpu")
    assert report["finished"] and report["stopped"] is None
    assert [c["outcome"] for c in report["cells"]] == ["ok"] * len(report["cells"]), report["cells"]
    assert report["cells"][0]["grade_id"] == "setup"
    chapter = report["chapter"]
    outcomes = {(e["key"], e["launcher"]): e["outcome"] for e in report["exercises"]}
    # one entry per step of the plan (6b's two steps share a key and a launcher: causal and not)
    assert len(report["exercises"]) == len(chapters.module(chapter).SANITIZE) and "missing" not in outcomes.values()
    if chapter in TRITON_CHAPTERS:
        assert set(outcomes.values()) == {"ok"}, report["exercises"]
        assert all(e["kernels"] for e in report["exercises"]), report["exercises"]   # Triton launches seen
        assert report["triton_kernels"] and not report["cuda_kernels"]
        return
    module = chapters.module(chapter)
    interpreted = {(s.exercise.key, s.launcher) for s in module.SANITIZE if s.exercise.cpu_sizes}
    if chapter in MIXED_CHAPTERS:
        assert interpreted and report["triton_kernels"], report["exercises"]
        assert {k: v for k, v in outcomes.items() if k in interpreted} == dict.fromkeys(interpreted, "ok")
    else:
        assert not interpreted, chapter
    cuda = {k: v for k, v in outcomes.items() if k not in interpreted}
    assert set(cuda.values()) == {"no-gpu"}, report["exercises"]
    assert report["cuda_kernels"], "the runner recorded no CUDA kernel"
    for name, kernel in report["cuda_kernels"].items():
        assert kernel["file"] == f"{name}.cu" and "__global__" in kernel["source"]
    if nvrtc_available()[0]:
        assert all("It does compile" in e["message"] for e in report["exercises"]
                   if (e["key"], e["launcher"]) not in interpreted), report["exercises"]


def test_runner_reports_a_cell_that_raises(tmp_path):
    nb = json.loads(SOLUTIONS[0].read_text())
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "fused-solution":
            cell["source"] = "x = 1\nraise ValueError('my mistake')\n"
    path = tmp_path / "01_vector_add.ipynb"
    path.write_text(json.dumps(nb))
    report = _runner_report(path, tmp_path, "--device", "cpu")
    (bad,) = [c for c in report["cells"] if c["outcome"] != "ok"]
    assert bad["grade_id"] == "fused-solution" and bad["message"] == "ValueError (line 2): my mistake"
    fused = next(e for e in report["exercises"] if e["launcher"] == "fused_axpb_relu")
    assert fused["outcome"] == "missing"


def test_runner_sees_a_kernel_a_cell_launches(tmp_path):
    """A kernel launched while the cells run (an assignment is run, unlike a bare call) is recorded, and
    so compiled with -lineinfo, from the first cell on, not only once the exercises start."""
    nb = json.loads(SOLUTIONS[0].read_text())
    probe = ('\nPROBE_SRC = r"""\nextern "C" __global__ void probe_kernel(float *x)\n{\n    x[0] = 1.0f;\n}\n"""\n'
             'probe = load_kernel(PROBE_SRC, "probe_kernel", where="PROBE_SRC")\n'
             'tried = probe((1,), (1,), [])\n')
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "napkin-solution":
            cell["source"] = "".join(cell["source"]) + probe
    path = tmp_path / "01_vector_add.ipynb"
    path.write_text(json.dumps(nb))
    report = _runner_report(path, tmp_path, "--device", "cpu")
    (napkin,) = [c for c in report["cells"] if c["grade_id"] == "napkin-solution"]
    assert napkin["outcome"] == "raised" and napkin["message"].startswith("NoGPUError (line "), napkin
    kernel = report["cuda_kernels"]["probe_kernel"]
    assert kernel["where"] == "PROBE_SRC" and kernel["file"] == "probe_kernel.cu"
    assert not any("probe_kernel" in e["kernels"] for e in report["exercises"])   # no exercise launched it


def test_tools_left_out_by_the_chapter_are_named(monkeypatch, tmp_path):
    """Chapters 5 and 6 run memcheck only, and the summary says which tools were left out and how to ask
    for them; tools left out by --tool are not named."""
    ran = []

    def fake_run_tool(tool, sanitizer, notebook, workdir, env, timeout_s):
        ran.append(tool)
        manifest = {"finished": True, "exercises": [{"key": "5a", "title": "fp16 matmul", "launcher": "matmul",
                                                     "stretch": False, "outcome": "ok", "kernels": ["k"]}]}
        return interpret(tool, "========= ERROR SUMMARY: 0 errors\n", manifest, 0, "", 1.0)

    monkeypatch.setattr(sanitize, "run_tool", fake_run_tool)
    ch05 = next(p for p in SOLUTIONS if p.parent.name.startswith("05_"))
    result = sanitize.sanitize_notebook(ch05, "/fake/compute-sanitizer", tmp_path, {})
    assert result.chapter == "ch05" and ran == ["memcheck"] and result.passed
    assert result.skipped_tools == ["racecheck", "synccheck"]
    text = sanitize.format_notebook(result)
    assert "racecheck, synccheck: not run for this chapter's kernels" in text and "--tool" in text
    assert text.splitlines()[-1] == "  CLEAN"

    ran.clear()
    result = sanitize.sanitize_notebook(ch05, "/fake/compute-sanitizer", tmp_path, {}, tools=["racecheck"])
    assert ran == ["racecheck"] and result.skipped_tools == []
    assert "not run for this chapter" not in sanitize.format_notebook(result)

    ran.clear()
    result = sanitize.sanitize_notebook(SOLUTIONS[0], "/fake/compute-sanitizer", tmp_path, {}, tools=["memcheck"])
    assert result.chapter == "ch01" and ran == ["memcheck"] and result.skipped_tools == []


def test_a_notebook_of_no_chapter_is_not_sanitized(tmp_path):
    path = tmp_path / "scratch.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1\n", "metadata": {}}]}))
    result = sanitize.sanitize_notebook(path, "/fake/compute-sanitizer", tmp_path, {})
    assert result.chapter is None and not result.tools and not result.passed
    assert "not a Kernel Ladder chapter notebook" in result.error and "ch01" in result.error


def test_runner_on_a_released_notebook_finds_nothing_written(tmp_path):
    course = sorted((ROOT / "course").glob("01_*/*.ipynb"))[0]
    report = _runner_report(course, tmp_path, "--device", "cpu")
    assert {e["outcome"] for e in report["exercises"]} == {"not-written"}


# ------------------------------------------------------------------------------------ on a GPU

def _sanitizer_or_skip() -> str:
    found = sanitize.find_sanitizer()
    if found is None:
        pytest.skip("compute-sanitizer not found (CUDA toolkit, or pip install nvidia-cuda-sanitizer-api-cu12)")
    return found


def _sanitize(notebook: Path, tool: str, tmp_path: Path) -> sanitize.NotebookSanitized:
    tool_sanitizer = _sanitizer_or_skip()
    env = sanitize.sanitize_env(tmp_path / "triton-cache")
    result = sanitize.sanitize_notebook(notebook, tool_sanitizer, tmp_path, env, tools=[tool], timeout_s=900)
    print(sanitize.format_notebook(result))   # shown by pytest when the test fails
    return result


@pytest.mark.gpu
def test_gpu_chapter_1_solution_is_clean_under_memcheck(tmp_path):
    result = _sanitize(SOLUTIONS[0], "memcheck", tmp_path)
    (run,) = result.tools
    assert run.status == "clean", sanitize.format_notebook(result)
    ran = {e["launcher"]: e["outcome"] for e in run.exercises}
    assert ran["vector_add"] == ran["fused_axpb_relu"] == "ok", run.exercises
    assert result.passed


@pytest.mark.gpu
def test_gpu_memcheck_reports_an_unguarded_store(tmp_path):
    nb = build.build("sanitize", "01_vector_add", "unguarded_add", tmp_path / "unguarded_add.ipynb")
    result = _sanitize(nb, "memcheck", tmp_path)
    (run,) = result.tools
    assert run.status == "errors" and not result.passed
    ours = [f for f in run.findings if f.failing and f.kernel == "vector_add"]
    assert ours, sanitize.format_notebook(result)
    assert ours[0].category == "memory"
    assert ours[0].code == "out[i] = a[i] + b[i];"
    assert ours[0].where.startswith("VECTOR_ADD_SRC line 6")


@pytest.mark.gpu
def test_gpu_racecheck_reports_a_missing_syncthreads(tmp_path):
    nb = build.build("sanitize", "03_tiling", "sgemm_no_sync", tmp_path / "sgemm_no_sync.ipynb")
    result = _sanitize(nb, "racecheck", tmp_path)
    (run,) = result.tools
    assert run.status == "errors" and not result.passed
    races = [f for f in run.findings if f.category == "race" and f.kernel == "sgemm_tiled"]
    assert races, sanitize.format_notebook(result)
    lines = {s["line"] for f in races for s in f.sites}
    assert lines & {13, 14} and lines & {17}, [f.sites for f in races]   # the tile stores and the reads


@pytest.mark.gpu
def test_gpu_racecheck_reports_the_softmax_race(tmp_path):
    """Chapter 7's softmax without the barrier between the warps' writes to shared memory and warp 0's
    reads (tests/submissions/wrong/softmax_smem_race.py): often right by luck, always a racecheck error."""
    nb = build.build("wrong", "07_reductions", "softmax_smem_race", tmp_path / "softmax_smem_race.ipynb")
    result = _sanitize(nb, "racecheck", tmp_path)
    (run,) = result.tools
    assert run.status == "errors" and not result.passed
    races = [f for f in run.findings if f.category == "race" and f.kernel == "softmax_rows"]
    assert races, sanitize.format_notebook(result)
    codes = {s["code"] for f in races for s in f.sites}
    assert any("wm[warp] = m" in c for c in codes) and any("wm[lane]" in c for c in codes), codes


def _sanitizer_entries():
    from submissions import wrong
    import importlib
    out = []
    for name in wrong.names():
        expect = importlib.import_module(f"submissions.wrong.{name}").EXPECT
        if expect.get("sanitize"):
            out.append(pytest.param(name, expect["sanitize"], id=name))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("name,tool", _sanitizer_entries())
def test_gpu_every_sanitizer_entry_of_the_exploit_suite_is_caught_by_its_tool(name, tool, tmp_path):
    """The exploit suite's entries that only a sanitizer sees (`EXPECT["sanitize"]`), each under its own
    tool: test_exploits.py leaves them to this test."""
    import importlib
    sub = importlib.import_module(f"submissions.wrong.{name}")
    nb = build.build("wrong", sub.CHAPTER_DIR, name, tmp_path / f"{name}.ipynb")
    result = _sanitize(nb, tool, tmp_path)
    (run,) = result.tools
    assert run.status == "errors" and not result.passed, sanitize.format_notebook(result)
    assert [f for f in run.findings if f.failing], sanitize.format_notebook(result)


def test_every_sanitizer_tool_has_an_entry_in_the_exploit_suite():
    assert {tool for _, tool in (p.values for p in _sanitizer_entries())} == set(TOOLS)
