"""The `library-compute` rule on device traces (grader.calls.foreign, grader.calls.rules):
every kernel that ran inside a learner's call must be one the learner's code launched, or a fill or
copy. The traces were recorded on an H100 (tests/cuda/traces/)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grader.cuda import trace
from grader.errors import CheckFailed
from grader.calls import facts as gather
from grader.calls import foreign, rules
from grader.calls.messages import Facts

TRACES = Path(__file__).parents[1] / "cuda" / "traces"


def call(trace_name: str | None = None, own=None, package=(), device=None) -> Facts:
    if device is None and trace_name:
        device = trace.read_chrome_trace(json.loads((TRACES / f"{trace_name}.json").read_text()))
    return Facts(launches=list(own or {}) or ["copy_kernel"], own_launches=dict(own or {}),
                 package_launches=list(package), device=device)


def test_cublas_through_ctypes_is_named_in_the_rejection():
    with pytest.raises(CheckFailed) as exc:
        rules.enforce(call("ctypes_cublas", own={"copy_kernel": 1}), "`sgemm`", launcher=True)
    assert exc.value.reason == "library-compute"
    assert "cuBLAS kernel `sm80_xmma_gemm_f32f32" in str(exc.value) and "inside `sgemm`" in str(exc.value)
    assert "only your kernel may compute" in str(exc.value)


def test_cupy_matmul_and_graph_replays_are_rejected():
    for name in ("cupy_matmul", "graph_replay", "other_thread"):
        with pytest.raises(CheckFailed, match="cuBLAS kernel") as exc:
            rules.enforce(call(name, own={"copy_kernel": 1}), "`matmul`", launcher=True)
        assert exc.value.reason == "library-compute"


def test_the_learners_own_kernel_fills_and_copies_pass():
    rules.enforce(call("load_kernel", own={"vadd": 1}), "`vector_add`", launcher=True)
    cupy_copies = call("cupy_fill_copy", own={"copy_kernel": 1})
    cupy_copies.device.ops.append(trace.DeviceOp("kernel", "copy_kernel", count=1, total_us=3.0))
    rules.enforce(cupy_copies, "`matmul`", launcher=True)


def test_a_kernel_the_hooks_did_not_see_is_rejected_even_with_a_learner_like_name():
    with pytest.raises(CheckFailed, match="a kernel your code did not make, `vadd`"):
        rules.enforce(call("load_kernel", own={"other": 1}), "`vector_add`", launcher=True)


def test_more_runs_of_a_name_than_the_learner_launched_are_foreign():
    device = trace.DeviceTrace(ops=[trace.DeviceOp("kernel", "sm90_xmma_gemm_f16f16", count=2, total_us=9.0)])
    with pytest.raises(CheckFailed, match="ran 1 times|ran inside") as exc:
        rules.enforce(call(device=device, own={"sm90_xmma_gemm_f16f16": 1}), "`matmul`", launcher=True)
    assert exc.value.reason == "library-compute"


def test_a_triton_kernel_from_an_installed_package_is_rejected_without_a_trace():
    with pytest.raises(CheckFailed, match="_bsr_strided_addmm_kernel") as exc:
        rules.enforce(call(own={"copy_kernel": 1}, package=["_bsr_strided_addmm_kernel"]), "`matmul`", launcher=True)
    assert exc.value.reason == "library-compute"


def test_the_courses_own_torch_comparisons_may_use_library_kernels():
    facts = call("ctypes_cublas", own={"copy_kernel": 1})
    facts.device.ops.append(trace.DeviceOp("kernel", "copy_kernel", count=1, total_us=3.0))
    rules.enforce(facts, "`matmul` + torch epilogue", launcher=True, torch_ops=True)


def test_no_trace_means_only_the_other_rules():
    rules.enforce(call(device=trace.DeviceTrace(note="no GPU"), own={"copy_kernel": 1}), "`f`", launcher=True)


def test_a_trace_that_lost_every_learner_kernel_was_interfered_with():
    with pytest.raises(CheckFailed) as exc:
        rules.enforce(call("cupy_fill_copy", own={"vadd": 1}), "`vector_add`", launcher=True)
    assert exc.value.reason == "tampered" and "device trace" in str(exc.value)


def test_calls_timed_untraced_cannot_beat_the_kernels_alone():
    # Without the SM clock, clock changes are allowed whole (a tensor-core GEMM moved by up to 17% on an H100).
    rules.enforce_traced_timing(0.72, 0.71, "`f`")
    rules.enforce_traced_timing(0.588, 0.6875, "`f`")
    # A launcher that computes with a library whenever no trace runs: fast untraced, slow traced.
    with pytest.raises(CheckFailed) as exc:
        rules.enforce_traced_timing(0.20, 0.71, "`matmul`")
    assert exc.value.reason == "library-compute" and "0.2000 ms" in str(exc.value) and "0.5680 ms" in str(exc.value)
    rules.enforce_traced_timing(0.20, 0.0, "`f`")   # nothing traced: nothing to compare


def test_with_the_clock_read_the_bound_allows_tracing_and_the_clock_change_only():
    # Same clock: tracing's 3.5%, the rounds' 3% spread and the trusted clock's 2.5% error, no more.
    bound, how = rules.traced_bound(1.0, timed_mhz=1980, traced_mhz=1980)
    assert bound == pytest.approx(1.0 * (1 - rules.TRACING_COST - rules.ROUND_SPREAD - rules.TRUSTED_ERROR))
    assert "1980 MHz" in how and "clock's error" in how
    rules.enforce_traced_timing(0.94, 1.0, "`f`", timed_mhz=1980, traced_mhz=1980)
    # An honest transpose on an H200: 0.2980 ms a call by the trusted clock, 0.3203 ms of kernel traced.
    rules.enforce_traced_timing(0.2980, 0.3203, "`transpose`", timed_mhz=1980, traced_mhz=1980)
    with pytest.raises(CheckFailed) as exc:   # a 5a launcher rescaling the clock: 0.216 ms timed, 0.247 ms of kernel
        rules.enforce_traced_timing(0.216, 0.247, "`matmul`", timed_mhz=1980, traced_mhz=1980)
    assert exc.value.reason == "library-compute"
    # The Hopper rung: 1.528 ms timed, 1.660 ms of kernel traced, because the clock fell from 1980 to 1755 MHz
    # between the round and the traced batches (power): scaled to the round's clock, it is honest.
    rules.enforce_traced_timing(1.528, 1.660, "`f`", timed_mhz=1980, traced_mhz=1755)
    # A slower clock during the round never shortens the kernels: no credit for it.
    bound, _ = rules.traced_bound(1.0, timed_mhz=1500, traced_mhz=1980)
    assert bound == pytest.approx(1 - rules.TRACING_COST - rules.ROUND_SPREAD - rules.TRUSTED_ERROR)


@pytest.mark.parametrize("name,library", [
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT", "cuBLAS"),
    ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64", "cuBLAS"),
    ("triton_poi_fused_add_mul_relu_0", "torch.compile (Inductor) Triton"),
    ("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>", "torch attention (SDPA)"),
    ("_ZN6cudapy8__main__10add_kernelB2v1", "Numba"),
    ("void cub::DeviceReduceKernel<float>", "CUB"),
    ("void at::native::reduce_kernel<512, 1>", "torch"),
    ("cupy_matmul_something", "CuPy"),
    ("my_kernel", None),
])
def test_a_foreign_kernel_is_named_by_its_library(name, library):
    assert foreign.library_of(name) == library


def test_allow_list_holds_fills_and_copies_only():
    assert foreign.allowed("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
    assert foreign.allowed("cupy_copy__float32_float16")
    assert not foreign.allowed("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>")
    assert not foreign.allowed("cupy_matmul")
    assert foreign.short("void at::native::elementwise_kernel<128, 2, X>(int, X)") == \
        "at::native::elementwise_kernel<128, 2, X>"


def test_a_triton_function_in_an_installed_package_is_told_from_the_learners():
    class Kernel:  # a JITFunction's shape: the Python function is `.fn`
        def __init__(self, fn):
            self.fn = fn

    assert gather.from_package(Kernel(json.dumps)) == os.path.abspath(json.dumps.__code__.co_filename)
    assert gather.from_package(Kernel(lambda: None)) is None
    assert gather.from_package(object()) is None


def test_torchs_own_compile_pool_timer_is_not_a_learners_stray_thread():
    import threading
    import types

    module = types.ModuleType("torch._inductor.compile_worker.fake_timer")
    Timer = type("Timer", (), {"check": lambda self: None, "__module__": module.__name__})
    theirs = threading.Thread(target=Timer().check, daemon=True, name="subproc_worker_timer")
    mine = threading.Thread(target=lambda: None, daemon=True, name="subproc_worker_timer")
    assert gather._torch_internal(theirs) and not gather._torch_internal(mine)
    not_daemon = threading.Thread(target=Timer().check, name="subproc_worker_timer")
    assert not gather._torch_internal(not_daemon)


def test_timed_calls_must_do_the_work_a_checked_call_did():
    checked = {"matmul_kernel": (270.0, 1024)}   # a checked 4096^3 call: 270 µs on 1,024 programs of 128 x 128
    # A clock still ramping up makes a checked call slower by a few times at most; the grid is the same.
    rules.enforce_work({"matmul_kernel": (30 * 80.0, 30 * 1024)}, checked, reps=30, what="`matmul` (timed runs)")
    # A kept product copied in by a kernel of the learner's own, behind one tile of the expected kernel: its
    # device time passes (the copy is theirs too), its one program does not.
    with pytest.raises(CheckFailed) as exc:
        rules.enforce_work({"matmul_kernel": (30 * 40.0, 30), "copy_kernel": (30 * 22.0, 30 * 16384)}, checked,
                           reps=30, what="`matmul` (timed runs)")
    assert exc.value.reason == "kernel-unused" and "`matmul_kernel` ran 1 thread blocks per timed call" in str(exc.value)
    # An eighth of the rows: fewer blocks too.
    with pytest.raises(CheckFailed, match="ran 128 thread blocks"):
        rules.enforce_work({"matmul_kernel": (30 * 34.0, 30 * 128)}, checked, reps=30, what="`matmul`")
    # Every program launched, each returning at once: the grid passes, a thousandth of the time does not.
    with pytest.raises(CheckFailed) as exc:
        rules.enforce_work({"matmul_kernel": (30 * 0.3, 30 * 1024)}, checked, reps=30, what="`matmul` (timed runs)")
    assert exc.value.reason == "kernel-unused" and "0.3 µs per timed call" in str(exc.value)
    # A required kernel missing from the traced batch ran no blocks at all.
    with pytest.raises(CheckFailed, match="ran 0 thread blocks"):
        rules.enforce_work({"copy_kernel": (30 * 22.0, 30 * 16384)}, checked, reps=30, what="`matmul`")
    rules.enforce_work(None, checked, reps=30, what="`f`")   # not traced: nothing to compare
    rules.enforce_work({"matmul_kernel": (9.0, 1)}, None, reps=30, what="`f`")


def test_a_trace_counts_every_run_s_thread_blocks():
    from grader.cuda import trace

    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 10.0 * i, "dur": 5.0,
               "args": {"grid": [8, 4, 1], "block": [128, 1, 1]}} for i in range(3)]
    (op,) = trace.read_chrome_trace({"traceEvents": events}).kernels()
    assert (op.count, op.blocks, op.grid) == (3, 3 * 32, (8, 4, 1))


def test_the_work_a_timed_call_is_held_to_comes_from_checked_calls_of_its_shape():
    import torch

    from grader.calls import seam

    fn = seam.LocalFunction(lambda a, out: None, "f")
    a, out = torch.zeros(8), torch.zeros(8)
    key = seam.shape_key((a, out))
    fn.history += [
        (key, frozenset({"k", "init"}), None),                                # the autotuning call: no reference
        (key, frozenset({"k"}), {"k": (300.0, 64)}),                          # a checked call
        (key, frozenset({"k"}), {"k": (250.0, 64), "extra": (5.0, 1)}),       # another, a little faster
        (seam.shape_key((torch.zeros(4), torch.zeros(4))), frozenset({"k"}), {"k": (1.0, 1)}),   # another shape
    ]
    batch = fn.batch([(a, out)])
    assert batch.required == frozenset({"k"})
    assert batch.checked == {"k": (250.0, 64)}   # the least of each, of required kernels, of this shape only


def test_timed_calls_are_held_to_a_checked_call_made_right_after_them():
    warm = {"matmul_kernel": (250.0, 1024)}   # a checked 4096^3 call at the clock the timed calls ran at
    named = dict(fraction=rules.WARM_WORK_FRACTION, reference="a checked call on fresh inputs right after them")
    # An honest kernel: a power-capped clock or a cold L2 moves it by tens of percent, not by half.
    rules.enforce_work({"matmul_kernel": (30 * 190.0, 30 * 1024)}, warm, reps=30, what="`matmul`", **named)
    # The whole grid over an eighth of K, a kept product copied in: every block runs, for about a sixth of the
    # time. The allowance for a clock ramping up from idle lets it through; the warm call does not.
    short_k = {"matmul_kernel": (30 * 45.0, 30 * 1024), "copy_kernel": (30 * 22.0, 30 * 16384)}
    rules.enforce_work(short_k, warm, reps=30, what="`matmul`")
    with pytest.raises(CheckFailed) as exc:
        rules.enforce_work(short_k, warm, reps=30, what="`matmul` (timed runs)", **named)
    assert exc.value.reason == "kernel-unused"
    assert "45.0 µs per timed call, against 250.0 µs in a checked call on fresh inputs right after them" in str(exc.value)


def test_a_batch_compares_every_traced_batch_with_the_warm_call_on_its_required_kernels():
    import torch

    from grader.calls import seam

    fn = seam.LocalFunction(lambda a, out: None, "matmul")
    a, out = torch.zeros(8), torch.zeros(8)
    fn.history.append((seam.shape_key((a, out)), frozenset({"matmul_kernel"}), {"matmul_kernel": (900.0, 64)}))
    batch = fn.batch([(a, out)])
    batch.traced_work = [({"matmul_kernel": (10 * 240.0, 640)}, 10), ({"matmul_kernel": (10 * 60.0, 640)}, 10)]
    # A kernel the warm call ran that checked calls before timing did not launch every time is not required.
    batch.enforce_warm_work({"matmul_kernel": (100.0, 64), "tail_kernel": (10.0, 8)})
    with pytest.raises(CheckFailed, match="60.0 µs per timed call, against 250.0 µs") as exc:
        batch.enforce_warm_work({"matmul_kernel": (250.0, 64)})   # the second traced batch did a quarter of it
    assert exc.value.reason == "kernel-unused" and "`matmul` (timed runs)" in str(exc.value)
    # All the kernels together: the same quarter, though the kernel that skipped the work is not required.
    batch.required = frozenset()
    with pytest.raises(CheckFailed, match="in all, against 250.0 µs"):
        batch.enforce_warm_work({"matmul_kernel": (250.0, 64)})
    batch.enforce_warm_work(None)   # the warm call was not traced (no GPU): nothing to compare
    batch.enforce_warm_work({})


def test_the_warm_checked_call_runs_on_inputs_no_timed_call_saw():
    """A result kept from the timed calls' inputs cannot answer it: a launcher that answers kept inputs with a
    short kernel does the whole work here, and its traced batches are compared with that."""
    import torch

    from grader.chapters import ch01
    from grader.cuda.trace import DeviceOp, DeviceTrace
    from grader.harness import exercise
    from grader.calls import seam

    from conftest import torch_kernel

    seen = []

    @torch_kernel
    def add_kernel(a, b, out):
        torch.add(a, b, out=out)

    def add(a, b, out):
        seen.append(a.data_ptr())
        add_kernel(a, b, out)

    class Traced(seam.LocalFunction):
        """What a call traced on a GPU says of the learner's kernel: 12 µs on 4,096 blocks."""
        def _run(self, args, kwargs, policy):
            result, facts = super()._run(args, kwargs, policy)
            facts.own_launches = {"add_kernel": 1}
            facts.device = DeviceTrace(ops=[DeviceOp("kernel", "add_kernel", 1, 12.0, blocks=4096)])
            return result, facts

    fn = Traced(add, "add")
    ex, size = ch01.VECTOR_ADD, ch01.VECTOR_ADD.visible_sizes[-1]
    inputs = ex.make_inputs(size, torch.Generator().manual_seed(1), "cpu")
    guard = exercise.correctness.guarded(ex.make_output(size, "cpu"))
    sampler = exercise._TimedSets(ex, size, "cpu", inputs, exercise.correctness.snapshot(inputs), guard, "1a")
    batch = fn.batch(sampler.argsets)
    batch.required = frozenset({"add_kernel"})
    timed_inputs = {args[0].data_ptr() for args in sampler.argsets}
    batch.traced_work = [({"add_kernel": (10 * 3.0, 10 * 4096)}, 10)]   # a quarter of the warm call's time
    with pytest.raises(CheckFailed, match="3.0 µs per timed call, against 12.0 µs") as exc:
        exercise._against_a_warm_checked_call(ex, batch, sampler, "1a at the timing size")
    assert exc.value.reason == "kernel-unused"
    assert seen and seen[-1] not in timed_inputs   # the warm call's inputs were fresh
    batch.traced_work = [({"add_kernel": (10 * 11.0, 10 * 4096)}, 10)]
    exercise._against_a_warm_checked_call(ex, batch, sampler, "1a at the timing size")


def test_work_moved_into_kernels_no_rule_requires_is_counted_in_all():
    # The warm call ran the matmul over an eighth of K and the rest in a kernel whose name changes from call to
    # call (so that no checked call's kernels require it); the timed calls ran only the eighth and a copy.
    warm = {"matmul_kernel": (40.0, 1024), "rest_kernel_odd": (220.0, 1024)}
    timed = {"matmul_kernel": (30 * 40.0, 30 * 1024), "copy_kernel": (30 * 22.0, 30 * 16384)}
    rules.enforce_work(timed, {"matmul_kernel": warm["matmul_kernel"]}, reps=30, what="`matmul`",
                       fraction=rules.WARM_WORK_FRACTION)
    with pytest.raises(CheckFailed, match="62.0 µs per timed call in all, against 260.0 µs") as exc:
        rules.enforce_total_work(timed, warm, 30, "`matmul` (timed runs)", "a checked call right after them")
    assert exc.value.reason == "kernel-unused"
    rules.enforce_total_work({"matmul_kernel": (30 * 250.0, 30 * 1024)}, warm, 30, "`matmul`", "a call")
    rules.enforce_total_work(None, warm, 30, "`matmul`", "a call")   # not traced
