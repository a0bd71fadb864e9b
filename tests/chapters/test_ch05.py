"""Chapter 5 (Triton matmul): the grader's logic on the CPU, the solution's kernels in Triton's
interpreter, the notebooks through `ladder check`, and the verdicts on a GPU."""

import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl

from conftest import HAS_GPU, ROOT, ladder_check_one, torch_kernel
from grader.harness import correctness
from grader.chapters import ch05
from grader.calls.seam import as_learner
from grader.errors import CheckFailed, KernelCompileError, NotImplementedYet
from submissions.build import build

NOTEBOOK = ROOT / "solutions/05_triton_matmul/05_triton_matmul.ipynb"
RELEASED = ROOT / "course/05_triton_matmul/05_triton_matmul.ipynb"
SPEED_CELLS = {"matmul-speed", "fused-speed"}


# ------------------------------------------------------------------ napkin math and grouped order

def _flops(m, n, k):
    return 2 * m * n * k


def _floor(flops, tflops):
    return flops / (tflops * 1e12) * 1e3


def _loaded(m, n, k, bm, bn):
    return 2 * (m * k * math.ceil(n / bn) + k * n * math.ceil(m / bm))


def test_napkin_accepts_the_right_answers(capsys):
    ch05.check_napkin_math(_flops, _floor, _loaded)
    assert "✓ 5.0" in capsys.readouterr().out


@pytest.mark.parametrize("flops, floor, loaded, message", [
    (lambda m, n, k: m * n * k, _floor, _loaded, "matmul_flops(1, 1, 1) (hint: each of the M*N outputs"),
    (_flops, lambda f, t: f / (t * 1e12), _loaded, "answer in milliseconds"),
    (_flops, _floor, lambda m, n, k, bm, bn: 2 * (m * k + k * n), "loaded_bytes(4096, 4096, 4096, 32, 32)"),
])
def test_napkin_rejects_wrong_answers_with_a_hint(flops, floor, loaded, message):
    with pytest.raises(CheckFailed, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        ch05.check_napkin_math(flops, floor, loaded)


def test_napkin_stub_is_not_written_yet():
    def stub(*args):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="exercise 5.0 is not written yet"):
        ch05.check_napkin_math(stub, stub, stub)


def test_grouped_order_accepts_the_reference_and_lists_and_numpy_ints(capsys):
    import numpy as np
    ch05.check_grouped_order(ch05.grouped_tile_reference)
    ch05.check_grouped_order(lambda *a: [np.int64(x) for x in ch05.grouped_tile_reference(*a)])
    assert "✓ 5.1" in capsys.readouterr().out


def _no_short_group(pid, grid_m, grid_n, group_m):
    per_group = group_m * grid_n
    first_m = (pid // per_group) * group_m
    within = pid % per_group
    return first_m + within % group_m, within // group_m


@pytest.mark.parametrize("fn, message", [
    (lambda pid, gm, gn, g: (pid // gn, pid % gn), r"grouped_tile\(pid=1, grid_m=4, grid_n=4, group_m=2\) returned \(0, 1\), "
                                                   r"expected \(1, 0\).*pid_m changes fastest"),
    (_no_short_group, r"grid_m=5, grid_n=3, group_m=2\).*the last group is shorter"),
    (lambda *a: ch05.grouped_tile_reference(*a)[0], "returned 0"),
])
def test_grouped_order_names_the_first_wrong_program(fn, message):
    with pytest.raises(CheckFailed, match=message):
        ch05.check_grouped_order(fn)


def test_wave_model_counts_the_strips_the_notebook_quotes():
    size, block = (4096, 4096, 4096), (128, 128)
    row_major = ch05.wave_traffic(ch05.grouped_tile_reference, size, block, 132, group_m=1)
    grouped = ch05.wave_traffic(ch05.grouped_tile_reference, size, block, 132, group_m=8)
    strip = 2 * 4096 * 128  # one 128 x 4096 fp16 strip: 1 MiB
    assert row_major[0] == 37 * strip and grouped[0] == 25 * strip
    assert grouped[1] < row_major[1]


# ------------------------------------------------------------------ exercises and tolerances

def test_exercises_are_timed_where_the_notebook_says():
    assert ch05.MATMUL.speed_size() == (4096, 4096, 4096) and ch05.FUSED.speed_size() == (8192, 8192, 1024)
    assert ch05.SPLIT_K.speed_size() == (512, 512, 65536) and ch05.SPLIT_K.key == "5a"
    assert ch05.MATMUL.ceiling == ch05.FUSED.ceiling == "fp16_tflops"
    assert ch05.MATMUL.flops((2, 3, 5)) == 60 and ch05.FUSED.flops((2, 3, 5)) == 60
    assert all(ch05.interpreter_work(s) <= ch05.CPU_MAX_WORK for s in ch05.MATMUL.cpu_sizes + ch05.FUSED.cpu_sizes)


def test_inputs_are_scaled_so_outputs_are_order_one():
    gen = torch.Generator().manual_seed(0)
    a, b = ch05.MATMUL.make_inputs((64, 64, 4096), gen, "cpu")
    assert a.dtype == b.dtype == torch.float16 and a.shape == (64, 4096) and b.shape == (4096, 64)
    std = (a.double() @ b.double()).std().item()
    assert 0.8 < std < 1.2


def test_fused_reference_is_the_tanh_gelu_the_solution_computes_as_x_sigmoid_2u():
    x = torch.linspace(-8, 8, 10001, dtype=torch.float64)
    as_sigmoid = x * torch.sigmoid(1.5957691216057308 * (x + 0.044715 * x**3))
    bias = torch.zeros(1, dtype=torch.float64)
    reference = ch05.FUSED.reference(x[:, None], torch.ones(1, 1, dtype=torch.float64), bias)[:, 0]
    assert torch.allclose(as_sigmoid, reference, rtol=0, atol=1e-12)
    exact = torch.nn.functional.gelu(x)  # erf form: accepted too, within the tolerance
    rtol, atol = ch05.FUSED.tolerance_for((1, 1, 1))
    assert torch.all((exact - reference).abs() <= atol + rtol * reference.abs())


def _fp16_accumulated(a, b, chunk):
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for k in range(0, a.shape[1], chunk):
        acc = (acc.float() + a[:, k:k + chunk].float() @ b[k:k + chunk].float()).half()
    return acc


@pytest.mark.parametrize("k", [1024, 4096])
def test_tolerance_passes_fp32_accumulation_and_fails_fp16_accumulation_and_bf16(k):
    gen = torch.Generator().manual_seed(k)
    size = (512, 512, k)
    a, b = ch05.MATMUL.make_inputs(size, gen, "cpu")
    expected = ch05.MATMUL.reference(a.double(), b.double())
    rtol, atol = ch05.MATMUL.tolerance_for(size)
    right = (a.float() @ b.float()).half()  # fp32 accumulation, one rounding at the end
    correctness.compare(right, expected, rtol=rtol, atol=atol, what="fp32 accumulation")
    with pytest.raises(CheckFailed, match="wrong result"):
        correctness.compare(_fp16_accumulated(a, b, 64), expected, rtol=rtol, atol=atol, what="fp16 accumulation")
    bf16 = (a.bfloat16().float() @ b.bfloat16().float()).half()
    with pytest.raises(CheckFailed, match="wrong result"):
        correctness.compare(bf16, expected, rtol=rtol, atol=atol, what="bf16 inputs")


def _cancelling_inputs():
    """One output whose product, 10.0037, rounds to 10.0 in fp16 (an error of 2^-8 - 2^-13), and a bias of
    -9.7 that leaves x = 0.30: eager's rounding of the product is then 0.0027 off at GELU's output, twice
    the tolerance there (0.00137)."""
    a = torch.zeros(1, 16, dtype=torch.float16)
    a[0, :2] = 1
    b = torch.zeros(16, 1, dtype=torch.float16)
    b[0, 0], b[1, 0] = 10.0, 2.0 ** -8 - 2.0 ** -13
    return a, b, torch.tensor([-9.7], dtype=torch.float16)


def test_5b_accepts_an_answer_rounded_where_eager_rounds_and_nothing_further_off():
    from grader.harness.exercise import verify

    inputs = _cancelling_inputs()
    size = (1, 1, 16)
    reference = ch05.FUSED.reference(*[t.double() for t in inputs])
    eager = ch05.FUSED.as_torch_computes(*inputs)
    rtol, atol = ch05.FUSED.tolerance_for(size)
    error = (eager.double() - reference).abs().item()
    assert error > 1.5 * (atol + rtol * reference.abs().item())   # the case: eager is outside the tolerance
    with pytest.raises(CheckFailed, match="wrong result"):          # and a plain comparison refuses it
        correctness.compare(eager, reference, rtol=rtol, atol=atol, what="eager")
    verify(ch05.FUSED, size, list(inputs), correctness.snapshot(inputs), eager.clone(), "eager's rounding")
    fused = ch05.FUSED.reference(*[t.float() for t in inputs]).half()   # fp32 throughout, one rounding
    verify(ch05.FUSED, size, list(inputs), correctness.snapshot(inputs), fused, "one rounding")
    further = (reference + 3 * (eager.double() - reference)).half()    # three times eager's error: refused
    with pytest.raises(CheckFailed, match="plus torch's own error at that element"):
        verify(ch05.FUSED, size, list(inputs), correctness.snapshot(inputs), further, "three times as far")


def test_5b_allowance_still_refuses_fp16_accumulation_and_bf16_inputs():
    from grader.harness.exercise import verify

    size = (512, 512, 1024)
    a, b, bias = ch05.FUSED.make_inputs(size, torch.Generator().manual_seed(5), "cpu")
    for name, product in (("fp16 accumulation", _fp16_accumulated(a, b, 64)),
                          ("bf16 inputs", (a.bfloat16().float() @ b.bfloat16().float()).half())):
        out = torch.nn.functional.gelu(product.float() + bias.float(), approximate="tanh").half()
        with pytest.raises(CheckFailed, match="wrong result"):
            verify(ch05.FUSED, size, [a, b, bias], correctness.snapshot([a, b, bias]), out, name)


def test_cpu_skips_sizes_too_large_for_the_interpreter(capsys, monkeypatch):
    monkeypatch.setattr(ch05, "has_gpu", lambda: False)
    kept = ch05._sizes_for_here(ch05.MATMUL, [(1, 1, 1), (4096, 4096, 1), (31, 33, 35), (1, 3000, 1000),
                                              (127, 129, 257)])
    assert kept == [(1, 1, 1), (31, 33, 35), (127, 129, 257)]   # one row across 3000 columns: 47 programs of 16 K steps
    assert "2 size(s) too large" in capsys.readouterr().out
    assert ch05._sizes_for_here(ch05.MATMUL, [(4096, 4096, 4096)]) == list(ch05.MATMUL.cpu_sizes)
    assert ch05._sizes_for_here(ch05.MATMUL, None) is None


def test_size_sweep_measures_every_launcher_and_draws_under_the_ceiling():
    import matplotlib
    matplotlib.use("Agg")
    sizes = (16, 32)
    curves = ch05.sweep_tflops({"torch as a launcher": lambda a, b, out: torch.mm(a, b, out=out)}, sizes, "cpu")
    assert set(curves) == {"torch as a launcher", "torch.mm"}
    assert all(len(v) == len(sizes) and all(x > 0 for x in v) for v in curves.values())
    fig = ch05.draw_sweep(sizes, curves, ceiling_tflops=1.0)
    assert fig.axes[0].get_ylabel() == "achieved TFLOP/s"


def test_results_plot_draws_tflops_of_every_result():
    import matplotlib
    matplotlib.use("Agg")
    from grader.harness.exercise import measure_speed
    from grader.harness.timing import CPUBackend

    @torch_kernel
    def torch_launcher(a, b, out):
        torch.mm(a, b, out=out)

    results = [measure_speed(ch05.MATMUL, torch_launcher, key, device="cpu", backend=CPUBackend(0.002), size=(16, 16, 16))
               for key in ("5a", "5a-stretch")]
    results[0].key = "naive"
    fig = ch05.plot_results(*results, None)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[:3] == ["naive", "5a-stretch", "torch.mm"]
    assert results[0].unit == "TFLOP/s"


# ------------------------------------------------------------------ Triton errors become messages

def _compile_for_sm90(kernel, signature, constexprs):
    """Run Triton's front end for an H100 target, with no GPU: enough to raise its compile errors."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs), target=GPUTarget("cuda", 90, 32))


@triton.jit
def stub_kernel(x_ptr, n, BLOCK: tl.constexpr):
    # YOUR CODE HERE
    raise NotImplementedError()


@triton.jit
def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_name, mask=offs < n)  # noqa: F821


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1", reason="needs Triton's compiler, not its interpreter")
def test_a_stub_kernel_that_fails_to_compile_on_a_gpu_is_not_written_yet():
    import warnings
    sig, const = {"x_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 16}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NotImplementedYet, match="still the released stub"):
            as_learner(lambda *a: _compile_for_sm90(stub_kernel, sig, const), "matmul").call()
        with pytest.raises(KernelCompileError, match="did not compile(.|\n)*undefined_name"):
            as_learner(lambda *a: _compile_for_sm90(broken_kernel, sig, const), "matmul").call()


def test_a_stub_launcher_is_not_written_yet():
    def matmul(a, b, out):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match=r"write `matmul\(a, b, out\)` and its kernel in the code cell under "
                                                r"'Exercise 5a'"):
        ch05.check_matmul(matmul, sizes=[(4, 4, 4)])


# ------------------------------------------------------------------ the kernels, in the interpreter

INTERPRETER_SCRIPT = r"""
import json
from grader.chapters import ch05
from submissions.ch05 import launchers, run_cell, stubbed
from submissions.build import _solution_sources

out = {}
def outcome(name, fn):
    try:
        fn()
        out[name] = "pass"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"

sol = launchers("ch05", "correct", ["napkin-solution", "grouped-solution", "matmul-solution", "fused-solution",
                                     "splitk-solution"])
small = [(1, 1, 1), (31, 33, 35), (127, 129, 257), (1, 300, 200), (300, 1, 200), (200, 300, 1)]
outcome("5a", lambda: (ch05.check_matmul(sol["matmul"]), ch05.check_matmul(sol["matmul"], sizes=small)))
outcome("5b", lambda: (ch05.check_fused(sol["matmul_bias_act"]), ch05.check_fused(sol["matmul_bias_act"], sizes=small)))
outcome("splitk", lambda: ch05.check_matmul_stretch(sol["matmul_splitk"]))
outcome("5a-speed", lambda: ch05.check_matmul_speed(sol["matmul"]))
naive = launchers("ch05", "naive_5a", ["matmul-solution"])
outcome("naive", lambda: ch05.check_matmul(naive["matmul"], sizes=small))
unfused = launchers("ch05", "unfused_5b", ["matmul-solution", "fused-solution"])
outcome("unfused", lambda: ch05.check_fused(unfused["matmul_bias_act"]))
wrong = launchers("ch05", "wrong", ["matmul-solution", "fused-solution"])
outcome("wrong-5a", lambda: ch05.check_matmul(wrong["matmul"]))
outcome("wrong-5b", lambda: ch05.check_fused(wrong["matmul_bias_act"]))

# The released stubs: both solution regions stubbed, and only the kernel's (launcher written).
source = _solution_sources("05_triton_matmul")["matmul-solution"]
stub = stubbed(source)
ns = dict(launchers("ch05", "stub", []))
run_cell(stub, ns, "/tmp/kernel-ladder/ch05/stub.py")
outcome("stub", lambda: ch05.check_matmul(ns["matmul"]))
outcome("stub-speed", lambda: ch05.check_matmul_speed(ns["matmul"]))
kernel_only = stubbed(source, regions=1)
run_cell(kernel_only, ns, "/tmp/kernel-ladder/ch05/kernel_stub.py")
outcome("kernel-stub", lambda: ch05.check_matmul(ns["matmul"]))

# The Hopper rung: its solution in the interpreter (Triton 3.9's runs tensor descriptors), what the
# check prints without a GPU, a shape TMA cannot copy, and its released stub.
import contextlib, io
hop = launchers("ch05", "correct", ["matmul-solution", "hopper-solution"])
outcome("hopper", lambda: ch05.check_correctness(ch05.HOPPER, hop["matmul_tma"],
                                                 list(ch05.HOPPER.cpu_sizes) + [(1, 8, 8), (200, 16, 40)], trials=1))
def printed(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        returned = fn()
    assert returned is None, returned
    return buf.getvalue()
out["hopper-check"] = printed(lambda: ch05.check_matmul_hopper(hop["matmul_tma"]))
outcome("hopper-misaligned", lambda: ch05.check_correctness(ch05.HOPPER, hop["matmul_tma"], [(8, 8, 10)], trials=1))
hop_stub = dict(launchers("ch05", "stub", ["matmul-solution"]))
run_cell(stubbed(_solution_sources("05_triton_matmul")["hopper-solution"]), hop_stub, "/tmp/kernel-ladder/ch05/hopper_stub.py")
out["hopper-stub"] = printed(lambda: ch05.check_matmul_hopper(hop_stub["matmul_tma"]))
print("RESULTS " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1", LADDER_FORCE_NO_GPU="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    proc = subprocess.run([sys.executable, "-c", INTERPRETER_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line[len("RESULTS "):])


@pytest.mark.parametrize("case", ["5a", "5b", "splitk", "naive", "unfused"])
def test_correct_kernels_pass_in_the_interpreter(interpreted, case):
    assert interpreted[case] == "pass", interpreted[case]


def test_speed_without_a_gpu_says_so(interpreted):
    assert interpreted["5a-speed"].startswith("NoGPUError: no GPU: speed not measured for exercise 5a")


@pytest.mark.parametrize("case", ["wrong-5a", "wrong-5b"])
def test_wrong_kernels_fail_with_the_first_wrong_element(interpreted, case):
    assert interpreted[case].startswith("CheckFailed") and "First wrong element at index" in interpreted[case]


@pytest.mark.parametrize("case, what", [("stub", "write `matmul(a, b, out)` and its kernel"),
                                        ("stub-speed", "write `matmul(a, b, out)` and its kernel"),
                                        ("kernel-stub", "write `matmul(a, b, out)` and its kernel")])
def test_stubs_are_not_written_yet_in_the_interpreter(interpreted, case, what):
    assert interpreted[case].startswith("NotImplementedYet: exercise 5a") and what in interpreted[case]


def test_the_hopper_rung_is_correct_in_the_interpreter_and_reports_no_gpu_for_speed(interpreted):
    assert interpreted["hopper"] == "pass", interpreted["hopper"]
    said = interpreted["hopper-check"]
    assert "✓ 5a persistent TMA matmul: correct" in said and "the Hopper rung's speed is not measured here" in said


def test_the_hopper_launcher_refuses_a_shape_tma_cannot_copy_with_the_reason(interpreted):
    said = interpreted["hopper-misaligned"]
    assert said.startswith("CheckFailed") and "K and N must be multiples of 8" in said, said


def test_the_hopper_stub_is_not_attempted_yet(interpreted):
    assert "Stretch goal not attempted yet: write matmul_tma and matmul_tma_kernel" in interpreted["hopper-stub"]


def test_without_tma_the_hopper_check_says_why_and_runs_nothing(monkeypatch, capsys):
    """A GPU before compute capability 9.0: the TMA probe (compiled for its architecture) says no, the
    check prints the GPU and returns None, and the learner's launcher is never called."""
    from grader.cuda import archs

    monkeypatch.setattr(ch05, "has_gpu", lambda: True)
    monkeypatch.setattr(ch05, "arch_here", lambda: archs.by_name("sm_89"))
    monkeypatch.setattr(ch05, "gpu_info", lambda: SimpleNamespace(name="NVIDIA GeForce RTX 4090"))

    def launcher(a, b, out):
        raise AssertionError("launched on a GPU without TMA")
    assert ch05.check_matmul_hopper(launcher) is None
    said = capsys.readouterr().out
    assert ("The Hopper rung needs TMA (sm_90+): your GPU is NVIDIA GeForce RTX 4090, sm_89 (compute capability "
            "8.9)") in said and "no cp.async.bulk.tensor in the PTX" in said and "nothing was run" in said


def test_an_interpreter_that_cannot_run_the_persistent_loop_is_said_so(monkeypatch, capsys):
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    monkeypatch.setattr(triton, "__version__", "3.6.0")
    assert ch05.check_matmul_hopper(lambda a, b, out: None) is None
    assert "not checkable in the interpreter of Triton 3.6.0" in capsys.readouterr().out


@pytest.mark.parametrize("arch, present", [("sm_80", False), ("sm_86", False), ("sm_89", False), ("sm_90", True)])
def test_the_tma_capability_is_found_by_compiling_for_the_architecture(arch, present):
    from grader.cuda.capabilities import find

    finding = find("TMA", arch)
    assert finding.present is present, finding.evidence
    assert ("cp.async.bulk.tensor (TMA) in the PTX" if present else "no cp.async.bulk.tensor") in finding.evidence


def test_the_hopper_configurations_kept_fit_227_kib_and_only_one_is_compiled_without_tma(monkeypatch):
    from grader.cuda import archs
    from grader.notebooks import shipped

    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    hopper = archs.by_name("sm_90")
    ns = shipped.solution_namespace("ch05", NOTEBOOK, hopper)
    configs, kept = ns["TMA_CONFIGS"], ns["TUNED_TMA_CONFIGS"]
    assert len(configs) <= 6 and kept == configs
    assert all(ch05.tma_shared_memory_bytes(c) <= hopper.max_shared_per_block for c in configs)
    assert ch05.tma_configs_that_fit(configs) == configs[:1], "no GPU: the interpreter gets the first only"
    for name in ("sm_75", "sm_80", "sm_86", "sm_89"):
        with archs.targeting(archs.by_name(name)):
            assert ch05.tma_configs_that_fit(configs) == configs[-1:], name


@pytest.mark.slow
def test_the_hopper_kernel_compiles_for_sm90_to_tma_copies_and_wgmma_in_the_counted_shared_memory():
    """Every configuration of the Hopper rung, cross-compiled for sm_90 from the solution's own launch:
    TMA loads and stores (cp.async.bulk.tensor in the PTX, async TMA copies in the TTGIR), wgmma, the
    shared memory ch05.tma_shared_memory_bytes counts (the text quotes 208 and 224 KiB), and a launch
    within sm_90's limits."""
    from grader.cuda import archs, crosscompile
    from grader.notebooks import shipped

    hopper = archs.by_name("sm_90")
    recorded = shipped.record_solution("ch05", NOTEBOOK, hopper)
    (launch,) = [l for l in recorded.launches if l.name == "matmul_tma_kernel"]
    assert launch.configs == tuple(recorded.namespace["TMA_CONFIGS"])
    shared = {}
    for label, args, kwargs in launch.variants():
        with crosscompile.quiet_triton():
            compiled = crosscompile.compile_kernel(launch.kernel, args, kwargs, hopper)
        ptx, ttgir = compiled.asm["ptx"], compiled.asm["ttgir"]
        assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async" in ptx and "mma.sync" not in ptx, label
        assert "async_tma_copy_global_to_local" in ttgir and "async_tma_copy_local_to_global" in ttgir, label
        shared[label] = compiled.metadata.shared
    builds = crosscompile.build(launch, hopper)
    for config, build in zip(launch.configs, builds):
        assert build.shared == ch05.tma_shared_memory_bytes(config), (build.variant, build.shared)
        assert not build.problems(hopper), (build.variant, build.problems(hopper))
    assert sorted({b.shared // 1024 for b in builds if b.shared >= 200 * 1024}) == [208, 224]


# ------------------------------------------------------------------ notebooks through ladder check

@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["05_triton_matmul"], indirect=True)
def test_solution_on_cpu_passes_correctness_in_the_interpreter_and_reports_no_gpu_for_speed(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid, c in cells.items():
        if gid in SPEED_CELLS:
            assert c["outcome"] == "fail" and c["error"]["ename"] == "NoGPUError", c
            assert "no GPU: speed not measured" in c["error"]["evalue"]
        else:
            assert c["outcome"] == "pass", c
    assert nb["score"] == 11 and nb["max_score"] == 15


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
def test_released_notebook_on_cpu_fails_every_graded_cell_with_not_implemented():
    code, nb, cells = ladder_check_one(RELEASED)
    assert code == 1 and nb["score"] == 0 and len(cells) == 9
    for c in cells.values():
        assert c["outcome"] == "fail" and c["error"]["ename"] == "NotImplementedYet", c
        assert "not written yet" in c["error"]["evalue"]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(NOTEBOOK)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert nb["score"] == 15


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_released_notebook_fails_every_graded_cell_with_not_implemented():
    _, nb, cells = ladder_check_one(RELEASED)
    for c in cells.values():
        assert c["error"] and c["error"]["ename"] == "NotImplementedYet", c


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("student, exercise, other_speed", [("naive_5a", "matmul", "fused-speed"),
                                                            ("unfused_5b", "fused", "matmul-speed")])
def test_gpu_previous_rung_is_correct_but_below_the_bar(tmp_path, student, exercise, other_speed):
    _, _, cells = ladder_check_one(build("ch05", "05_triton_matmul", student, tmp_path / f"{student}.ipynb"))
    assert cells[f"{exercise}-visible"]["passed"] and cells[f"{exercise}-hidden"]["passed"]
    speed = cells[f"{exercise}-speed"]
    assert not speed["passed"] and "below the bar" in speed["error"]["evalue"], speed
    assert cells[other_speed]["passed"], cells[other_speed]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_wrong_student_fails_every_correctness_cell(tmp_path):
    _, nb, cells = ladder_check_one(build("ch05", "05_triton_matmul", "wrong", tmp_path / "wrong.ipynb"))
    failed = {gid for gid, c in cells.items() if not c["passed"]}
    # 5a's kernel drops only a partial last K chunk, and 4096 has none: its speed cell passes. The
    # diagnosis is the solution's, which the wrong student leaves alone.
    assert failed == set(cells) - {"matmul-speed", "diagnose-test"}, {k: v["outcome"] for k, v in cells.items()}


@pytest.mark.gpu
def test_gpu_stub_kernel_with_a_written_launcher_is_not_written_yet():
    from submissions.build import _solution_sources
    from submissions.ch05 import launchers, run_cell, stubbed

    kernel_only = stubbed(_solution_sources("05_triton_matmul")["matmul-solution"], regions=1)
    ns = dict(launchers("ch05", "stub", []))
    run_cell(kernel_only, ns, "/tmp/kernel-ladder/ch05/gpu_kernel_stub.py")
    # one message for any part of the exercise left as released: the launcher or the kernel
    with pytest.raises(NotImplementedYet, match=r"5a \(.*\) is not written yet: write `matmul\(a, b, out\)` and its kernel"):
        ch05.check_matmul(ns["matmul"], sizes=[(64, 64, 64)], trials=1)


# ------------------------------------------------------------------ configurations that fit the GPU

def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=warps,
                         num_stages=stages)


def test_shared_memory_counts_the_buffers_triton_compiles_to():
    """Triton keeps s - 1 buffers where tl.dot is mma.sync and s where it is wgmma (compiled figures for
    every configuration and architecture: tests/cuda/test_cross_arch.py)."""
    from grader.cuda import archs

    config = _config(128, 256, 64, 8, 3)    # one buffer: (128 x 64 + 64 x 256) x 2 bytes = 48 KiB
    assert ch05.shared_memory_bytes(config, archs.by_name("sm_86")) == 96 * 1024
    assert ch05.shared_memory_bytes(config, archs.by_name("sm_90")) == 144 * 1024


def test_the_configurations_kept_are_those_that_fit_the_architecture(monkeypatch):
    from grader.cuda import archs

    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    configs = [_config(128, 256, 64, 8, 3), _config(128, 128, 64, 4, 4), _config(128, 128, 32, 4, 3)]
    assert ch05.configs_that_fit(configs) == configs[:1], "no GPU: the interpreter gets the first only"
    with archs.targeting(archs.by_name("sm_90")):
        assert ch05.configs_that_fit(configs) == configs
    with archs.targeting(archs.by_name("sm_75")):
        assert ch05.configs_that_fit(configs) == configs[2:]
    tiny = archs.by_name("sm_75").__class__("sm_75", "test", "test", 1024, 8 * 1024)
    with archs.targeting(tiny):
        assert ch05.configs_that_fit(configs) == configs[2:], "none fits: the smallest, for Triton's own error"


def test_the_solution_keeps_at_least_two_large_tile_configurations_on_99_and_64_kib_parts():
    from grader.cuda import archs
    from grader.notebooks import shipped

    for name in ("sm_75", "sm_86", "sm_89"):
        arch = archs.by_name(name)
        ns = shipped.solution_namespace("ch05", NOTEBOOK, arch)
        kept = ns["TUNED_CONFIGS"]
        assert len(kept) >= 2 and all(ch05.shared_memory_bytes(c, arch) <= arch.max_shared_per_block for c in kept)
        assert sum(c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] >= 128 * 128 for c in kept) >= 2, name
    assert len(shipped.solution_namespace("ch05", NOTEBOOK, archs.by_name("sm_90"))["TUNED_CONFIGS"]) == 6


def test_show_configs_prints_every_architecture_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setenv("LADDER_FORCE_NO_GPU", "1")
    ch05.show_configs([_config(128, 256, 64, 8, 3), _config(128, 128, 32, 4, 3)])
    out = capsys.readouterr().out
    assert "sm_75 (Turing" in out and "64 KiB per block" in out and "too big" in out and "fits" in out


def test_the_chapter_text_states_the_per_architecture_shared_memory_limits():
    text = json.loads(NOTEBOOK.read_text())
    tuning = next("".join(c["source"]) for c in text["cells"] if c.get("id") == "tuning-md")
    flat = " ".join(tuning.split())
    for words in ("64 KiB on compute capability 7.5", "163 KiB on 8.0", "99 KiB on 8.6 and 8.9", "227 KiB on 9.0"):
        assert words in flat, words
    assert "ch05.configs_that_fit" in flat and "metadata.shared" in flat


def test_5b_bar_on_hopper_separates_the_rungs_of_both_records():
    """The sm_90 bar against the ten runs a rung on an H100 and an H200 (assets/results/calibration/ch05-5b-sm90): the
    fused solution above it every time, both unfused rungs below it every time."""
    from grader.harness.bars import bar_for

    bar = bar_for("5b", arch="sm_90").bar
    for gpu in ("h100", "h200"):
        record = json.loads((ROOT / "assets" / "results" / "calibration" / "ch05-5b-sm90" / gpu / "ch05-5b-calibration.json").read_text())
        assert record["cc"] == "9.0" and len(record["rungs"]) == 3
        for rung in record["rungs"]:
            speedups = [run["speedup"] for run in rung["runs"]]
            assert len(speedups) == 10
            if rung["expected"] == "pass":
                assert min(speedups) >= bar, (gpu, rung["rung"], min(speedups))
            else:
                assert max(speedups) < bar, (gpu, rung["rung"], max(speedups))
