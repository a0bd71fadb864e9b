"""Chapter 1: vector add and fusion.

Exercises
- 1.0  napkin math: bytes moved by a vector add, and the time floor they imply (CPU-checkable)
- 1a   `vector_add(a, b, out)`: out = a + b, fp32. Speed bar vs `torch.add` (bars.toml "1a");
       stretch bar "1a-stretch", reported but not graded
- 1.1  napkin math for fusion: bytes moved by torch eager and by one fused kernel (CPU-checkable)
- 1b   `fused_axpb_relu(a, x, b, out)`: out = relu(a*x + b), fp32, elementwise. Speed bar vs torch
       eager (three kernels); torch.compile is reported for comparison, never graded

Every launcher takes torch tensors on the GPU that the grader allocated, and writes into `out`.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..cuda.gpu import free_gpu_bytes, gpu_or_reason
from ..harness import answers, plots
from ..profiles.diagnose import Case
from ..harness.answers import call_learner, require_close
from ..harness.exercise import (Exercise, SmallSizes, SpeedResult, check_correctness, check_speed, check_stretch,
                                ungraded_timing_skipped)
from ..harness.quiet import captured_stderr
from ..harness.timing import bench

N_TIMING = 1 << 27  # 512 MiB per fp32 array: about ten times any current L2


def _timing_size(bytes_per_element: int) -> Callable[[], int]:
    """2^27 elements, halved until the check (inputs, snapshots, float64 reference) fits in memory."""

    def size() -> int:
        n, free = N_TIMING, free_gpu_bytes()
        while n * bytes_per_element > 0.8 * free and n > (1 << 22):
            n //= 2
        return n

    return size


def _randn(n: int, gen: torch.Generator, device: str) -> torch.Tensor:
    return torch.randn(n, generator=gen, device=device, dtype=torch.float32)


def _empty(n: int, device: str) -> torch.Tensor:
    return torch.empty(n, device=device, dtype=torch.float32)


def _n(n: int) -> str:
    return f"n={n:,}"


VECTOR_ADD = Exercise(
    key="1a", title="vector add", where="the code cell under 'Exercise 1a'",
    signature="vector_add(a, b, out)", arg_names=("a", "b"),
    make_inputs=lambda n, gen, dev: (_randn(n, gen, dev), _randn(n, gen, dev)),
    make_output=_empty,
    reference=lambda a, b: a + b,
    baseline=lambda a, b, out: torch.add(a, b, out=out),
    baseline_name="torch.add",
    dtype=torch.float32,
    bytes_moved=lambda n: 3 * 4 * n,
    visible_sizes=(1000, 31, 1 << 20),
    speed_size=_timing_size(72),
    describe_size=_n,
    speed_hint="one thread per element, a block size that is a multiple of 32 (256 is a good start), "
               "enough blocks to cover every element, and coalesced loads: thread i reads element i.",
)

FUSED = Exercise(
    key="1b", title="fused relu(a*x + b)", where="the code cell under 'Exercise 1b'",
    signature="fused_axpb_relu(a, x, b, out)", arg_names=("a", "x", "b"),
    make_inputs=lambda n, gen, dev: (_randn(n, gen, dev), _randn(n, gen, dev), _randn(n, gen, dev)),
    make_output=_empty,
    reference=lambda a, x, b: torch.relu(a * x + b),
    baseline=lambda a, x, b, out: torch.relu(a * x + b),
    baseline_name="torch eager",
    dtype=torch.float32,
    bytes_moved=lambda n: 4 * 4 * n,
    visible_sizes=(1000, 31, 1 << 20),
    speed_size=_timing_size(100),
    describe_size=_n,
    others={"torch.compile": lambda: torch.compile(lambda a, x, b: torch.relu(a * x + b))},
    speed_hint="read a, x and b once and write out once, in one kernel: no intermediate arrays.",
)

EXERCISES = (VECTOR_ADD, FUSED)
BAR_KEYS = {"1a": "1a", "1a-stretch": "1a", "1b": "1b"}
SANITIZE = (
    SmallSizes(VECTOR_ADD, "vector_add", (1, 31, 1000, 4099)),
    SmallSizes(FUSED, "fused_axpb_relu", (1, 31, 1000, 4099)),
    SmallSizes(VECTOR_ADD, "vector_add_v4", (1, 3, 31, 1001, 4099), stretch=True),
)


# ------------------------------------------------------------------ what the notebook calls

def check_vector_add(vector_add, sizes=None, trials: int = 2):
    return check_correctness(VECTOR_ADD, vector_add, sizes, trials)


def check_vector_add_speed(vector_add) -> SpeedResult:
    return check_speed(VECTOR_ADD, vector_add, "1a")


def check_vector_add_stretch(vector_add) -> SpeedResult | None:
    return check_stretch(VECTOR_ADD, vector_add, "1a-stretch", (1, 31, 1001, 4099, 1 << 20),
                         "vector_add_v4 and VECTOR_ADD_V4_SRC")


def check_fused(fused_axpb_relu, sizes=None, trials: int = 2):
    return check_correctness(FUSED, fused_axpb_relu, sizes, trials)


def check_fused_speed(fused_axpb_relu) -> SpeedResult:
    return check_speed(FUSED, fused_axpb_relu, "1b")


def check_napkin_math(vector_add_bytes, floor_ms) -> None:
    """Exercise 1.0: bytes a vector add must move, and the time that gives at a bandwidth."""
    for n in (1, 1000, 1 << 27):
        require_close(call_learner(vector_add_bytes, n, exercise="1.0", names="`vector_add_bytes` and `floor_ms`"), 12 * n,
               f"vector_add_bytes({n}) (hint: how many fp32 arrays are read, how many written, 4 bytes each?)")
    for nbytes, gbps in ((12 * (1 << 27), 3000.0), (1e6, 1.0), (4.0, 1000.0)):
        require_close(call_learner(floor_ms, nbytes, gbps, exercise="1.0", names="`floor_ms`"), nbytes / (gbps * 1e9) * 1e3,
               f"floor_ms({nbytes!r}, {gbps!r}) (hint: GB/s means 1e9 bytes per second; answer in milliseconds)")
    print("✓ 1.0 napkin math: bytes moved and time floor are right")


def check_fusion_napkin_math(eager_bytes, fused_bytes) -> None:
    """Exercise 1.1: bytes moved by torch eager's three kernels, and by one fused kernel."""
    for n in (1, 1000, 1 << 27):
        require_close(call_learner(eager_bytes, n, exercise="1.1", names="`eager_bytes` and `fused_bytes`"), 32 * n,
               f"eager_bytes({n}) (hint: list each of the three kernels' reads and writes)")
        require_close(call_learner(fused_bytes, n, exercise="1.1", names="`fused_bytes`"), 16 * n, f"fused_bytes({n})")
    print(f"✓ 1.1 fusion napkin math: right; the best fusion can do here is {32 / 16:.2f}x")


# -------------------------------------------------------------------------------- plots

def plot_results(*results: SpeedResult):
    """Bar chart: achieved GB/s of each of your kernels beside torch's, under the copy ceiling."""
    gpu = next((r.gpu for r in results if r is not None), "")
    return plots.plot_results(*results, title=f"Chapter 1 on {gpu}")


def plot_bandwidth_vs_size(kernels: dict[str, Callable], sizes=None):
    """Achieved GB/s of vector-add launchers (and torch.add) against n: launch overhead, then HBM."""
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    ok, reason = gpu_or_reason()
    if not ok:
        print(f"{reason}: nothing to measure here.")
        return None
    if ungraded_timing_skipped("the sweep"):
        return None
    sizes = sizes or [1 << k for k in range(12, 28, 2)]
    curves = {name: [] for name in [*kernels, "torch.add"]}
    gen = torch.Generator(device="cuda").manual_seed(torch.seed())
    with captured_stderr():
        for n in tqdm(sizes, desc="sizes"):
            a, b = _randn(n, gen, "cuda"), _randn(n, gen, "cuda")
            out = _empty(n, "cuda")
            for name, fn in kernels.items():
                curves[name].append(12 * n / (bench(lambda: fn(a, b, out)) * 1e-3) / 1e9)
            curves["torch.add"].append(12 * n / (bench(lambda: torch.add(a, b, out=out)) * 1e-3) / 1e9)
            del a, b, out
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for name, gbps in curves.items():
        ax.plot(sizes, gbps, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (fp32 elements per array)")
    ax.set_ylabel("achieved GB/s")
    ax.legend()
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ diagnose: reading two recorded profiles

# Two recorded profiles of this chapter's rungs (assets/profiles/H100); the learner names what binds the
# first and the rung that relieves it. Checked on a CPU; the answer key is checked against the recorded
# numbers by tests/profiles/test_diagnose.py.
DIAGNOSE = Case(
    key="1.P", exercise="1a", rung="one_per_thread", beside="float4", binding="bytes-in-flight",
    next_rung="16-byte loads (float4), with a tail for n % 4",
    choices=("a shared-memory tile", "16-byte loads (float4), with a tail for n % 4",
             "blocks of 1,024 threads", "fuse it with the next kernel"),
    why="At 83% of DRAM peak, its warps waiting on loads (long scoreboard), the plain kernel moves no more "
        "bytes than it must: a vector add has nothing to fuse with, so fewer bytes is not the remedy. It is "
        "short of the peak because each thread has one 4-byte load in flight; float4 loads (four times the "
        "bytes per load, fewer instructions) took the same bytes to 91%.")


def check_diagnosis(diagnosis) -> None:
    answers.check_diagnosis(DIAGNOSE, diagnosis)
