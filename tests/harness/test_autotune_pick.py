"""Correctness trials run one autotuning configuration each, chosen by the shape (grader.cuda.autotune):
every configuration gets checked across a check's shapes, untimed, and a wrong one is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.cuda import autotune, launches

ROOT = Path(__file__).resolve().parents[2]

# An autotuned matmul whose second configuration (BUG=1) adds 1 to every output element. In the
# interpreter (no GPU), through ch05's exercise 5a and the grader's own check_correctness.
SCRIPT = r"""
import json
import triton
import triton.language as tl
from grader.chapters import ch05
from grader.harness.exercise import check_correctness
from grader.calls.seam import as_learner

CONFIGS = [triton.Config({"BM": 16, "BN": 16, "BK": 16, "BUG": 0}, num_warps=4),
           triton.Config({"BM": 32, "BN": 32, "BK": 16, "BUG": 1}, num_warps=4),
           triton.Config({"BM": 16, "BN": 32, "BK": 32, "BUG": 0}, num_warps=4)]

@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def mm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BUG: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    if BUG:
        acc += 1.0
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    mm_kernel[lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))](a, b, out, M, N, K)

out = {}
fn = as_learner(matmul)
for name, sizes in (("one shape", [(20, 24, 40)]), ("three shapes", [(20, 24, 40), (33, 17, 50), (8, 40, 24)])):
    try:
        check_correctness(ch05.MATMUL, fn, sizes, trials=1, verbose=False)
        out[name] = "pass"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
out["ran"] = fn.last_facts.configs
print("RESULTS " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def picked():
    env = dict(os.environ, TRITON_INTERPRET="1", LADDER_FORCE_NO_GPU="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line[len("RESULTS "):])


def test_one_shape_checks_only_the_first_configuration(picked):
    # Timing every configuration would have chosen among all three; the trial runs the first, untimed.
    assert picked["one shape"] == "pass"


def test_a_check_over_several_shapes_finds_the_wrong_configuration_and_names_it(picked):
    text = picked["three shapes"]
    assert text.startswith("CheckFailed"), text
    assert "M=33 N=17 K=50" in text                       # the second shape ran the second configuration
    assert "mm_kernel: BM=32, BN=32, BK=16, BUG=1, num_warps=4" in text
    assert "run your configurations in turn, one per shape" in text
    assert picked["ran"] == ["mm_kernel: BM=32, BN=32, BK=16, BUG=1, num_warps=4, num_stages=3"]


class OutOfResources(Exception):
    """Named as Triton's error for a configuration the GPU cannot run."""


def _fake_tuner(configs):
    from triton.runtime.autotuner import Autotuner

    tuner = Autotuner.__new__(Autotuner)
    tuner.configs, tuner.arg_names, tuner.nargs = list(configs), ["x"], None
    tuner.early_config_prune, tuner.perf_model = None, None
    return tuner


def test_a_configuration_the_gpu_cannot_run_is_passed_over_and_the_list_restored():
    import triton

    configs = [triton.Config({"B": b}, num_warps=4) for b in (64, 128, 256)]
    tuner = _fake_tuner(configs)
    seen = []

    def run():
        seen.append(tuner.configs[0].kwargs["B"])
        if tuner.configs[0].kwargs["B"] == 128:
            raise OutOfResources("out of resource: shared memory")
        return "ran"

    used: list[str] = []
    result = autotune.run_picked(launches.Launch("autotune", "k", tuner, run, args=(1,)), 4, used)
    assert result == "ran" and seen == [128, 256]            # pick 4 of 3: the second, then the next
    assert used == ["k: B=256, num_warps=4, num_stages=3; passed over: B=128, num_warps=4, num_stages=3 "
                    "(OutOfResources)"]
    assert tuner.configs == configs


def test_any_other_error_reaches_the_learner_with_the_configuration_named():
    import triton

    tuner = _fake_tuner([triton.Config({"B": 64}), triton.Config({"B": 128})])

    def run():
        raise ValueError("the learner's bug")

    used: list[str] = []
    with pytest.raises(ValueError):
        autotune.run_picked(launches.Launch("autotune", "k", tuner, run, args=(1,)), 0, used)
    assert used == ["k: B=64, num_warps=4, num_stages=3"] and len(tuner.configs) == 2


def test_the_learners_own_pruning_decides_what_can_be_picked():
    import triton

    tuner = _fake_tuner([triton.Config({"B": b}) for b in (64, 128, 256)])
    tuner.early_config_prune = lambda configs, nargs, **kw: [c for c in configs if c.kwargs["B"] <= nargs["x"]]
    used: list[str] = []
    autotune.run_picked(launches.Launch("autotune", "k", tuner, lambda: None, args=(128,)), 5, used)
    assert used == ["k: B=128, num_warps=4, num_stages=3"]   # pick 5 of the 2 kept: the second


def test_ahead_of_its_notebook_every_kept_configuration_is_compiled_without_running():
    """On a GPU shared with other checks an autotuned launch stops before timing (grader.cuda.sharing), but
    first compiles every configuration the learner's pruning keeps, each on its own: one that fails to
    compile leaves the others compiled, and nothing runs."""
    import triton

    tuner = _fake_tuner([triton.Config({"B": b}, num_warps=w) for b, w in ((64, 4), (128, 8), (256, 8))])
    tuner.early_config_prune = lambda configs, named, **kw: [c for c in configs if c.kwargs["B"] <= 128 or named["x"] > 1]
    compiled = []

    class Fn:
        def warmup(self, *args, grid, **kwargs):
            assert "warmup" not in kwargs and grid == "the grid"
            if kwargs["B"] == 64:
                raise OutOfResources("out of resource: shared memory")
            compiled.append((args, kwargs["B"], kwargs["num_warps"]))

    tuner.fn = Fn()

    def run():
        raise AssertionError("compiling must not launch")

    launch = launches.Launch("autotune", "k", tuner, run, args=(1,), kwargs={"grid": "the grid", "warmup": False})
    assert autotune.compile_every_config(launch) == 1
    assert compiled == [((1,), 128, 8)]                     # B=256 pruned for x=1; B=64 failed to compile
    assert tuner.nargs is None and len(tuner.configs) == 3


def test_compiling_a_configuration_applies_its_pre_hook_to_copies_of_the_descriptors():
    """A configuration's pre_hook may set what the compile specialises on (chapter 6's tuned forward sets
    its tensor descriptors' tile shapes there): compiled without a launch, each configuration is compiled
    with the arguments its hook makes, as the autotuner would launch it, and the learner's own descriptor
    is left as the launcher made it."""
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    def tile_shape(args):
        args["desc"].block_shape = [args["B"], 16]

    tuner = _fake_tuner([triton.Config({"B": b}, pre_hook=tile_shape) for b in (32, 64)])
    tuner.arg_names = ["desc", "x"]
    seen = []

    class Fn:
        def warmup(self, desc, x, grid, **kwargs):
            seen.append((list(desc.block_shape), kwargs["B"]))

    tuner.fn = Fn()
    desc = TensorDescriptor(torch.zeros(128, 16, dtype=torch.float16), [128, 16], [16, 1], [16, 16])
    launch = launches.Launch("autotune", "k", tuner, lambda: None, args=(desc, 1), kwargs={"grid": "g"})
    assert autotune.compile_every_config(launch) == 2
    assert seen == [([32, 16], 32), ([64, 16], 64)]
    assert desc.block_shape == [16, 16]
    plain = triton.Config({"B": 8})
    assert autotune.configured_args(plain, ["desc", "x"], (desc, 1), {}) == (desc, 1)
