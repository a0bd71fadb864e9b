"""Chapter 7 (reductions and normalisation): the CPU exercises and their answer keys, the tolerances
against what they must reject, the stacked output of 7b through the seam, the solution and students
under Triton's interpreter, the notebook through `ladder check`, and the kernels on a GPU."""

import json
import math

import pytest
import torch
from conftest import CHECK_OUTCOME, HAS_GPU, ROOT, ladder_check_one, run_script

from grader.chapters import ch07
from grader.cuda import archs
from grader.errors import CheckFailed, NotImplementedYet

SOLUTION = ROOT / "solutions/07_reductions/07_reductions.ipynb"


def stub(*args):
    raise NotImplementedError()


# ------------------------------------------------------------------------------- 7.0, 7.1, 7.2

def test_napkin_math_check(capsys):
    ch07.check_napkin_math(lambda r, c: 8 * r * c, lambda r, c: 16 * r * c)
    assert "✓ 7.0" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"softmax_bytes\(1, 1\).*written once"):
        ch07.check_napkin_math(lambda r, c: 4 * r * c, lambda r, c: 16 * r * c)


def binding_limits(cases) -> set[str]:
    return {name for t, r, s, a in cases for name in ch07.occupancy_reference(t, r, s, archs.by_name(a)).limiters}


def test_occupancy_cases_cover_every_limit():
    assert binding_limits(ch07.OCCUPANCY_VISIBLE + ch07.OCCUPANCY_HIDDEN) == {"threads", "blocks", "registers",
                                                                              "shared memory"}
    assert {"threads", "registers", "shared memory"} <= binding_limits(ch07.OCCUPANCY_VISIBLE)


def test_equal_limits_are_all_named():
    """1,024 threads at 22 registers (the solution's softmax on an H100): the thread limit and the register
    file each allow two blocks. Naming only the first of two equal limits would blame one of them."""
    occ = ch07.occupancy_reference(1024, 22, 256, archs.by_name("sm_90"))
    assert occ.limiters == ("threads", "registers") and "limited by threads and registers alike" in occ.describe()


def test_occupancy_reference_by_hand():
    h100 = archs.by_name("sm_90")
    # 1,024 threads at 32 registers: 32 warps x 1,024 registers = 32K per block, two blocks: 100%, which is
    # also all the threads an SM holds: both limits allow two.
    assert ch07.occupancy_reference(1024, 32, 0, h100) == ch07.Occupancy(2, 1.0, ("threads", "registers"))
    # 33 registers round up to 40 a thread (1,280 a warp): 12 warps in each quarter of the register file,
    # 48 in the SM, one block of 32: 50%.
    assert ch07.occupancy_reference(1024, 33, 0, h100) == ch07.Occupancy(1, 0.5, ("registers",))
    # 64 threads at 40 registers: 48 warps are 24 blocks of 2, where one undivided file of 65,536
    # registers would hold 51 warps, 25 blocks (cudaOccMaxBlocksPerSMRegsLimit divides it in four first).
    assert ch07.occupancy_reference(64, 40, 0, h100) == ch07.Occupancy(24, 0.75, ("registers",))
    # 48 KiB + 1 KiB reserved per block on an A100's 164 KiB: three blocks of 8 warps = 24 of 64 warps.
    occ = ch07.occupancy_reference(256, 40, 48 * 1024, archs.by_name("sm_80"))
    assert (occ.blocks, occ.limiter) == (3, "shared memory") and occ.fraction == pytest.approx(24 / 64)


def _learner_occupancy(threads, registers, shared, arch):
    occ = ch07.occupancy_reference(threads, registers, shared, arch)
    return occ.blocks, occ.fraction


def test_occupancy_check_accepts_the_key_and_names_the_limit(capsys):
    ch07.check_occupancy(_learner_occupancy, hidden=True)
    assert "14 visible and hidden launches" in capsys.readouterr().out

    def no_registers(threads, registers, shared, arch):
        return _learner_occupancy(threads, 0, shared, arch)

    with pytest.raises(CheckFailed, match=r"registers=64, shared=0, sm_86\).*the registers limit is the smallest"):
        ch07.check_occupancy(no_registers)
    with pytest.raises(CheckFailed, match=r"should return a tuple \(blocks, occupancy\)"):
        ch07.check_occupancy(lambda *a: 3)


def test_occupancy_check_fails_one_undivided_register_file():
    """The rule the driver does not use (65,536 registers shared by every warp of the SM) fails the visible
    launches, on (64, 40, 0, sm_90): 25 blocks against the driver's 24."""
    def undivided(threads, registers, shared, arch):
        warps = -(-threads // 32)
        per_warp = -(-registers * 32 // 256) * 256
        per_block = -(-(shared + arch.reserved_shared_per_block) // 128) * 128
        blocks = min(arch.max_threads_per_sm // (warps * 32), arch.max_blocks_per_sm,
                     (arch.registers_per_sm // per_warp) // warps,
                     arch.shared_per_sm // per_block if per_block else arch.max_blocks_per_sm)
        return blocks, blocks * warps * 32 / arch.max_threads_per_sm

    assert undivided(1024, 32, 256, archs.by_name("sm_90")) == _learner_occupancy(1024, 32, 256, archs.by_name("sm_90"))
    with pytest.raises(CheckFailed, match=r"occupancy\(threads=64, registers=40, shared=0, sm_90\).*expected \(24,"):
        ch07.check_occupancy(undivided)


def test_combine_key_and_check(capsys):
    ch07.check_combine(ch07.combine_reference)
    assert "✓ 7.1" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"combine\(\(1.0, 2.0\), \(3.0, 1.5\)\).*rescale|m = max"):
        ch07.check_combine(lambda a, b: (max(a[0], b[0]), a[1] + b[1]))

    def naive(a, b):   # exponentiates the maxima themselves: e^1000 overflows
        m = max(a[0], b[0])
        if m == float("-inf"):
            return m, 0.0
        return m, (a[1] * math.exp(a[0]) + b[1] * math.exp(b[0])) / math.exp(m)

    with pytest.raises(CheckFailed, match=r"\(\(1000.0, 1.0\), \(999.0, 2.0\)\) raised OverflowError"):
        ch07.check_combine(naive)

    def nan_on_empty(a, b):
        m = max(a[0], b[0])
        return m, a[1] * math.exp(a[0] - m) + b[1] * math.exp(b[0] - m) if m != float("-inf") else float("nan")

    with pytest.raises(CheckFailed, match=r"combine\(\(-inf, 0.0\), \(-inf, 0.0\)\).*an empty part"):
        ch07.check_combine(nan_on_empty)


def test_cpu_exercises_say_not_written_yet():
    for check, args in ((ch07.check_napkin_math, (stub, stub)), (ch07.check_combine, (stub,)),
                        (ch07.check_occupancy, (stub,))):
        with pytest.raises(NotImplementedYet, match="not written yet"):
            check(*args)


# ------------------------------------------------------------------- inputs and tolerances

def _softmax_inputs(size, seed=0):
    return ch07._softmax_inputs(size, torch.Generator().manual_seed(seed), "cpu")


def test_softmax_rows_are_shifted_so_that_skipping_the_maximum_overflows():
    (x,) = _softmax_inputs((8, 31))
    assert x[1].min() > 80 and x[2].max() < -30
    naive = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
    assert not torch.isfinite(naive[1]).all()


def test_softmax_tolerance_passes_fp32_and_fails_a_dropped_element():
    rtol, atol = ch07._softmax_tolerance(None)
    for size in ch07.SOFTMAX_VISIBLE:
        (x,) = _softmax_inputs(size)
        want = torch.softmax(x.double(), -1)
        torch.testing.assert_close(torch.softmax(x, -1).double(), want, rtol=rtol / 10, atol=atol)
    (x,) = _softmax_inputs((8, 31))
    e = torch.exp(x.double() - x.double().max(-1, keepdim=True).values)
    dropped = e / e[:, :30].sum(-1, keepdim=True)        # a reduction that lost element 30
    with pytest.raises(AssertionError):
        torch.testing.assert_close(dropped, torch.softmax(x.double(), -1), rtol=rtol, atol=atol)
    (x,) = _softmax_inputs((2, 50257))
    e = torch.exp(x.double() - x.double().max(-1, keepdim=True).values)
    short = e / (0.97 * e.sum(-1, keepdim=True))          # 3% of a long row missing
    with pytest.raises(AssertionError):
        torch.testing.assert_close(short, torch.softmax(x.double(), -1), rtol=rtol, atol=atol)


def _norm_inputs(size, dtype=torch.float16, seed=0):
    return ch07._norm_inputs(size, torch.Generator().manual_seed(seed), "cpu", dtype)


def test_norm_inputs_reach_below_the_epsilon():
    x, res, w = _norm_inputs((100, 1000))
    r = x.float() + res.float()
    ms = r.pow(2).mean(-1)
    assert ms[1] == 0 and (ms < 20 * ch07.RMS_EPS).sum() >= 3 and ms.max() > 1   # where eps moves the result 2% or more
    assert w.dtype == torch.float16 and w.shape == (1000,)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_norm_tolerance_passes_one_rounding_and_fails_without_eps(dtype):
    ex = ch07.ADD_RMSNORM_BF16 if dtype == torch.bfloat16 else ch07.ADD_RMSNORM
    for size in ch07.NORM_VISIBLE:
        rtol, atol = ex.tolerance_for(size)
        x, res, w = _norm_inputs(size, dtype)
        want = ch07.add_rmsnorm_reference(*(t.double() for t in (x, res, w)))
        got = ch07.add_rmsnorm_reference(x, res, w).double()     # fp32 statistics, one rounding each
        torch.testing.assert_close(got, want, rtol=rtol / 2, atol=atol / 2)
        r = (x.double() + res.double())
        no_eps = (r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True)) * w.double()).to(dtype).double()
        with pytest.raises(AssertionError):
            torch.testing.assert_close(torch.stack((no_eps, want[1])), want, rtol=rtol, atol=atol)


def test_bytes_and_the_stacked_output():
    assert ch07.SOFTMAX.bytes_moved((4096, 32000)) == 8 * 4096 * 32000
    assert ch07.ADD_RMSNORM.bytes_moved((16384, 4096)) == 2 * (4 * 16384 * 4096 + 4096)
    assert ch07.ADD_RMSNORM.make_output((3, 5), "cpu").shape == (2, 3, 5)
    assert ch07.ADD_RMSNORM_BF16.make_output((3, 5), "cpu").dtype == torch.bfloat16
    assert ch07.ADD_RMSNORM.split_output and not ch07.SOFTMAX.split_output


def test_split_output_hands_the_learner_two_views_of_the_graders_tensor():
    from grader.harness.exercise import learner_for

    seen = {}

    def add_rmsnorm(x, residual, weight, out, residual_out):
        seen["shapes"] = (out.shape, residual_out.shape)
        seen["views"] = (out.data_ptr(), residual_out.data_ptr())
        normed, r = ch07.add_rms_norm(x, residual, weight)
        out.copy_(normed)
        residual_out.copy_(r)

    fn = learner_for(ch07.ADD_RMSNORM, add_rmsnorm)
    stacked = torch.empty(2, 3, 5, dtype=torch.float16)
    x, res, w = _norm_inputs((3, 5))
    fn.call(x, res, w, stacked)
    assert seen["shapes"] == ((3, 5), (3, 5))
    assert seen["views"] == (stacked.data_ptr(), stacked[1].data_ptr())
    torch.testing.assert_close(stacked, ch07.add_rmsnorm_reference(x, res, w))
    assert learner_for(ch07.ADD_RMSNORM, fn) is fn and fn.with_trailing().split_output


@pytest.mark.skipif(HAS_GPU, reason="the no-GPU path")
def loads_before(instructions, stop: str) -> int:
    """Global loads (LDG) in the machine code before the first instruction whose opcode starts with `stop`."""
    count = 0
    for ins in instructions:
        op = ins.split("*/")[-1].strip().lstrip("@!P0123456789 ").split(" ")[0]
        if op.startswith(stop):
            return count
        count += op.startswith("LDG")
    raise AssertionError(f"no {stop} in the listing")


def test_the_reduction_rungs_loads_in_flight_are_what_the_text_counts():
    """reduce-after counts bytes in flight per thread from the code: the tree rungs load one element (the first
    add during load two) before their first barrier, and the grid-stride loop of the shuffle rungs is unrolled
    four times with four loads issued before its first add. This holds it to the sm_90 machine code."""
    from grader.cuda import sass
    from grader.learner.cells import cuda_sources

    source = dict(cuda_sources(SOLUTION)[0])["REDUCE_SRC"]
    listing = lambda name: sass.disassemble(source=source, name=name, arch="sm_90").instructions  # noqa: E731
    for tree, loads in (("sum_sequential", 1), ("sum_first_add", 2), ("sum_last_warp", 2)):
        assert loads_before(listing(tree), "BAR") == loads, tree
    loop = listing("sum_shuffle_atomic")
    unrolled = [i for i, ins in enumerate(loop) if "LDG" in ins]
    # after the loop's remainder (one load, one add), the unrolled body: four loads, then the first of four adds
    body = loop[unrolled[1]:]
    assert loads_before(body, "FADD") == 4


def test_the_on_chip_rungs_keep_one_and_four_loads_in_flight():
    """Exercise 7.P (a)'s rungs, as its reading says: the on-chip softmax's first pass issues one 16-byte load and
    stores it on chip before the next; the rung it names next issues four before it stores or merges any."""
    from grader.cuda import sass
    from submissions.ch07 import on_chip_7a, on_chip_loads_7a

    for rung, loads in ((on_chip_7a, 1), (on_chip_loads_7a, 4)):
        source = rung.CELLS["softmax-solution"].split('SOFTMAX_SRC = r"""')[1].split('"""')[0]
        assert loads_before(sass.disassemble(source=source, name="softmax_rows_on_chip", arch="sm_90").instructions,
                            "STS") == loads, rung.__name__


def test_kernel_resources_without_a_gpu_come_from_ptxas():
    from grader import load_kernel
    from grader.cuda.nvrtc import nvrtc_available
    from grader.learner.cells import source

    if not nvrtc_available()[0]:
        pytest.skip(nvrtc_available()[1])
    cell = next(c for c in json.loads(SOLUTION.read_text())["cells"] if c["id"] == "softmax-solution")
    ns = {"load_kernel": load_kernel, "np": None}
    exec(source(cell).split("softmax_kernel = ")[0], ns)
    kernel = load_kernel(ns["SOFTMAX_SRC"], "softmax_rows")
    registers, shared = ch07.kernel_resources(kernel, archs.by_name("sm_90"))
    assert 8 <= registers <= 64 and shared == 256   # wm[32] and ws[32]


# --------------------------------------------------------- the kernels, on a CPU, in subprocesses

INTERPRETED = CHECK_OUTCOME + r"""
import torch
from grader.chapters import ch07
from submissions.build import launchers

cells = ["napkin-solution", "combine-solution", "occupancy-solution", "norm-solution", "stretch-solution"]
found = {}
for name in ("correct", "unfused_7b", "wrong"):
    ns = launchers("ch07", name, cells)
    found[name] = {"norm": outcome(ch07.check_add_rmsnorm, ns["add_rmsnorm"], trials=1),
                   "bf16": outcome(ch07.check_add_rmsnorm, ns["add_rmsnorm"], sizes=[(3, 33)], trials=1,
                                   dtype=torch.bfloat16),
                   "speed": outcome(ch07.check_add_rmsnorm_speed, ns["add_rmsnorm"]),
                   "stretch": outcome(ch07.check_groupnorm_silu_stretch, ns["groupnorm_silu"])}
ns = launchers("ch07", "correct", cells)
exec('''
def torch_norm(x, residual, weight, out, residual_out):
    add_rmsnorm(x, residual, weight, out, residual_out)
    out.copy_(ch07.rms_norm(x + residual, weight))   # torch computes with the grader's tensors
''', ns)
found["torch_norm"] = outcome(ch07.check_add_rmsnorm, ns["torch_norm"], trials=1)
print(json.dumps(found))
"""


@pytest.mark.slow
def test_solution_and_students_under_the_triton_interpreter():
    found = run_script(INTERPRETED)
    correct, unfused, wrong = found["correct"], found["unfused_7b"], found["wrong"]
    assert correct["norm"] == correct["bf16"] == correct["stretch"] == "pass", correct
    assert correct["speed"].startswith("NoGPUError: no GPU: speed not measured for exercise 7b"), correct["speed"]
    assert unfused["norm"] == unfused["bf16"] == "pass", unfused
    assert wrong["norm"].startswith("CheckFailed") and "wrong result" in wrong["norm"], wrong
    assert "5 rows x 100" in wrong["norm"], wrong["norm"]     # right for 64 columns (a power of two), not 100
    assert "torch computed with the grader's tensors" in found["torch_norm"], found["torch_norm"]


@pytest.mark.slow
@pytest.mark.skipif(HAS_GPU, reason="CPU-only behaviour; the GPU tests below cover GPUs")
@pytest.mark.parametrize("graded_solution", ["07_reductions"], indirect=True)
def test_solution_on_cpu_grades_what_a_cpu_can_and_says_no_gpu_for_the_rest(graded_solution):
    """The solution as `ladder grade` graded it once for the whole run (tests/solution_runs.py).
    Slow (20 to 60 s on 2 cores) where it is the run's first test to ask for that grading (graded_solution says why)."""
    code, nb, cells = graded_solution.as_check()
    assert code == 0 and nb["error"] is None and nb["nothing_lost"]   # only unchecked points: ladder check exits 0
    for gid in ("napkin-test", "combine-test", "occupancy-test", "norm-visible", "norm-hidden", "diagnose-test"):
        assert cells[gid]["outcome"] == "pass", cells[gid]
    for gid in ("softmax-visible", "softmax-hidden", "softmax-speed", "norm-speed"):
        assert cells[gid]["error"]["ename"] == "NoGPUError", cells[gid]
    assert "compile for sm_80 and sm_90" in cells["softmax-visible"]["error"]["evalue"]
    assert nb["score"] == 8 and nb["max_score"] == 16


# ------------------------------------------------------------------------------------ GPU

@pytest.mark.gpu
def test_gpu_softmax_solution_and_rungs_are_correct_and_a_power_of_two_tree_is_not():
    from submissions.build import launchers

    for name in ("correct", "scalar_7a", "three_pass_7a"):
        ch07.check_softmax(launchers("ch07", name, ["softmax-solution"])["softmax"], trials=1)
    pow2 = launchers("wrong", "softmax_pow2_only", ["softmax-solution"])["softmax"]
    with pytest.raises(CheckFailed, match="wrong result"):
        ch07.check_softmax(pow2, sizes=[(8, 31)], trials=1)
    ch07.check_softmax(pow2, sizes=[(4, 4096), (3, 256)], trials=1)   # right for powers of two


@pytest.mark.gpu
def test_gpu_driver_occupancy_matches_the_model_for_the_softmax_kernel(capsys):
    from submissions.build import launchers

    ns = launchers("ch07", "correct", ["softmax-solution", "occupancy-solution"])
    kernel = ns["softmax_kernel"]
    registers, shared = ch07.kernel_resources(kernel)
    from grader.cuda.gpu import arch_here

    model = ch07.occupancy_reference(1024, registers, shared, arch_here())
    assert ch07.driver_blocks_per_sm(kernel, 1024) == model.blocks, (registers, shared, model)
    ch07.compare_occupancy(ns["occupancy"], kernel, 1024)
    assert "driver:" in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_solution_passes_every_graded_cell():
    code, nb, cells = ladder_check_one(SOLUTION)
    assert code == 0, {k: v["error"] for k, v in cells.items() if not v["passed"]}
    assert nb["score"] == 16 == nb["max_score"]


# ------------------------------------------------------------------------------ 7b: fusion, from the trace

def _traced(*rows):
    """A KernelTime as the device trace of 7b's timed calls gives it: (name, launches per call)."""
    from grader.harness.kernel_time import KernelRow, KernelTime

    return KernelTime(calls=40, rows=[KernelRow(name, launches, 0.1) for name, launches in rows], busy_ms=2.0)


def test_norm_fusion_passes_one_kernel_and_fails_an_add_kernel_then_a_norm_kernel(capsys, monkeypatch):
    """The solution's one kernel passes; unfused_7b's two (tests/submissions/ch07) fail `not-fused` whatever the
    bar said, and without a trace the instructor's policy for unchecked cells decides."""
    ch07.require_norm_fused(_traced(("add_rmsnorm_kernel", 1)))
    assert "✓ 7b fusion: 1 launch of your kernels per call" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"7b: your code launched 2 of your kernels per call \(add_kernel ×1, "
                                          r"rmsnorm_kernel ×1\); fused, it is 1") as exc:
        ch07.require_norm_fused(_traced(("add_kernel", 1), ("rmsnorm_kernel", 1)))
    assert exc.value.reason == "not-fused"
    monkeypatch.setenv("LADDER_UNCHECKED", "zero")
    from grader.harness.kernel_time import KernelTime

    with pytest.raises(CheckFailed) as exc:
        ch07.require_norm_fused(KernelTime.untraced("CUPTI unavailable"))
    assert exc.value.reason == "unchecked" and "7b fusion" in str(exc.value)
