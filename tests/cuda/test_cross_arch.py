"""Every kernel in solutions/ compiled for every architecture the course names (sm_75, sm_80, sm_86,
sm_89, sm_90), on a machine with no GPU: CUDA C through NVRTC, Triton through its cross-compiler from
the launches the solutions make. Each must launch within its architecture's shared-memory and register
limits (grader.cuda.archs), and carry tensor-core instructions wherever a chapter's text says it does.

Compiles are cubins: NVRTC assembles with its own ptxas, Triton with the ptxas its wheel ships
(triton/backends/nvidia/bin), and registers come from ptxas's report. The Triton compiles take tens of
seconds per chapter and architecture (minutes for sm_75, where tl.dot becomes spilling FMA code), so
they are marked slow; Triton's cache and LADDER_CACHE_DIR make a second run fast.
"""

import contextlib
import re
from functools import lru_cache

import pytest
import torch

from grader.chapters import ch05
from grader.cuda import archs, crosscompile
from grader.cuda.capabilities import find
from grader.notebooks import shipped

ARCHS = archs.ARCHS
NAMES = [a.name for a in ARCHS]
KERNELS = shipped.cuda_kernels()


@lru_cache(maxsize=None)
def cuda(arch: archs.Arch) -> dict[str, shipped.CudaBuild]:
    return {b.source_name: b for b in shipped.cuda_builds(arch)}


def _one_worker(share: str, arch: archs.Arch):
    """The tests that read one compile (cached for the process: `cuda`, `triton_build`, `every_config`) run in one
    of the suite's workers (tests/parallel.py): a second worker would compile it all again."""
    return pytest.param(arch, id=arch.name, marks=pytest.mark.xdist_group(f"shared-cross-{share}-{arch.name}"))


CUDA_ARCHS = [_one_worker("cuda", arch) for arch in ARCHS]


def _source(name: str) -> str:
    return next(src for _, n, src in KERNELS if n == name)


# ------------------------------------------------------------------------------------------ CUDA C

def test_every_solution_cuda_kernel_is_checked():
    assert len(KERNELS) >= 18, [k[1] for k in KERNELS]
    assert any("cp.async" in src for _, _, src in KERNELS), "chapter 4's stretch goal uses cp.async"


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_every_cuda_kernel_compiles_except_cp_async_before_sm80(arch):
    """The first test of an architecture's group, which compiles every CUDA kernel of the solutions for it through
    NVRTC and ptxas (5 to 25 s on 2 cores; the other tests of the group read those builds)."""
    cp_async = find("cp.async", arch).present
    for name, build in cuda(arch).items():
        if "cp.async" in _source(name) and not cp_async:
            assert not build.ok, f"{name} compiled for {arch.name}, which has no cp.async"
            # cp.async may be named beside other sm_80 features (chapter 4c's .m16n8k16 MMA)
            assert re.search(r"it uses (?:\S+, )*cp\.async(?:, \S+)*, which needs compute capability 8\.0 or newer "
                             rf"\(sm_80 and later\), so it cannot be compiled for {arch.name}", build.error), build.error
            continue
        assert build.ok, build.error
        assert f".target {arch.name}" in build.compiled.ptx and build.compiled.cubin
        assert build.usage, f"ptxas reported nothing for {name}"


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_every_cuda_kernel_launches_within_the_architectures_limits(arch):
    for name, build in cuda(arch).items():
        for kernel, problems in build.problems(arch).items():
            assert not problems, f"{name} `{kernel}` on {arch.name}: {problems}"


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_wmma_kernels_use_tensor_cores_on_every_architecture_and_the_fma_version_does_not(arch):
    wmma = [n for n, b in cuda(arch).items() if b.ok and "wmma::mma_sync" in _source(n)]
    assert len(wmma) >= 2
    for name in wmma:
        assert cuda(arch)[name].tensor_core_ops() > 0, f"{name} has no mma.sync for {arch.name}"
    assert cuda(arch)["FMA_GEMM_SRC"].tensor_core_ops() == 0


def test_a_kernel_over_the_register_file_is_caught():
    from grader.cuda.resources import Usage, launch_problems

    heavy = Usage("k", "sm_86", registers=128, static_shared=0, spill_bytes=0, stack=0)
    assert launch_problems(heavy, archs.by_name("sm_86"), 512) == []
    assert "need 131,072 registers, more than the 65,536 of an SM" in launch_problems(heavy, archs.by_name("sm_86"), 1024)[0]
    big = Usage("k", "sm_75", registers=32, static_shared=40 * 1024, spill_bytes=0, stack=0)
    assert "more than sm_75's 64 KiB" in launch_problems(big, archs.by_name("sm_75"), 256, 32 * 1024)[0]


# ------------------------------------------------------------------------------------------ Triton

TRITON_CHAPTERS = sorted(shipped.triton_chapters())


def test_the_triton_chapters_are_found():
    assert TRITON_CHAPTERS == ["ch05", "ch06", "ch07", "ch10"]


def _promised(chapter: str, kernel: str, arch: archs.Arch) -> str | None:
    """The tensor-core instruction the chapter's text promises for a tl.dot kernel on `arch`: none on
    sm_75 (Triton 3.3 and later compile tl.dot to FMA there: chapter 5's introduction), `mma.sync` on
    sm_80 to sm_89, `wgmma` on Hopper, except chapter 5's worked 32 x 32 kernel, whose text says a
    32-row tile is too small for wgmma, and chapter 10's decode kernels, whose tiles have 16 rows."""
    if arch.name == "sm_75":
        return None
    # Chapter 10's products are a GQA group's 16 rows against a tile of keys: too few rows for wgmma (64 a warp group).
    if arch.name == "sm_90" and not (chapter == "ch05" and kernel == "naive_matmul_kernel") and chapter != "ch10":
        return "wgmma.mma_async"
    return "mma.sync"


def _uses_tl_dot(built: shipped.TritonChapter, kernel: str) -> bool:
    """Whether `kernel` calls tl.dot, itself or through the @triton.jit helpers it calls."""
    jitted = {}
    for name, value in built.namespace.items():
        while not hasattr(value, "src") and hasattr(value, "fn"):   # an autotuner around the kernel
            value = value.fn
        if hasattr(value, "src"):
            jitted[name] = value.src
    seen, todo = set(), [kernel]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        src = jitted.get(name, "")
        if "tl.dot(" in src:
            return True
        todo += [other for other in jitted if f"{other}(" in src]
    return False


# Chapter 5's builds share their worker with its configurations' test below, which compiles the same kernels.
TRITON_BUILDS = [pytest.param(chapter, arch, id=f"{chapter}-{arch.name}",
                              marks=[pytest.mark.xdist_group(f"shared-cross-ch05-{arch.name}")] if chapter == "ch05" else [])
                 for chapter in TRITON_CHAPTERS for arch in ARCHS]


@pytest.mark.slow
@pytest.mark.parametrize("chapter, arch", TRITON_BUILDS)
def test_every_triton_kernel_compiles_fits_and_uses_the_promised_instructions(chapter, arch):
    """Every Triton kernel of a chapter, each variant its launchers compile, compiled for one architecture through
    Triton's cross-compiler and assembled by ptxas. Without Triton's cache (a fresh clone) chapter 6's take 30 to 95 s
    an architecture on 2 cores, chapter 5's 20 to 40 s: the suite's only look at the code other GPUs would run."""
    built = shipped.triton_build(chapter, arch)
    launched = {b.name for b in built.builds}
    # Every kernel the notebook defines is launched, or called by one that is (a @triton.jit helper).
    sources = "\n".join(launch.kernel.src for launch in built.launches)
    assert all(k in launched or f"{k}(" in sources for k in built.defined), built.defined - launched
    for b in built.builds:
        problems = b.problems(arch)
        assert not problems, f"{b.name} ({b.variant}) on {arch.name}: {problems}"
        promised = _promised(chapter, b.name, arch) if _uses_tl_dot(built, b.name) else None
        ops = b.tensor_core_ops()
        if promised:
            assert promised in ops, f"{b.name} ({b.variant}) on {arch.name}: {ops or 'no tensor-core instructions'}"
        else:
            assert not ops, f"{b.name} ({b.variant}) on {arch.name}: {ops}"
    if chapter == "ch05":   # the worked 32 x 32 kernel's summary in the text: "8 KiB", and 4 KiB with no tensor-core
        (naive,) = [b for b in built.builds if b.name == "naive_matmul_kernel"]   # instruction on compute capability 7.5
        assert naive.shared == (4 if arch.name == "sm_75" else 8) * 1024, (arch.name, naive.shared)


# ------------------------------------------------------------------------- chapter 5's configurations

@lru_cache(maxsize=None)
def every_config(arch: archs.Arch) -> list[tuple[object, crosscompile.TritonBuild]]:
    """Each of the solution's MATMUL_CONFIGS compiled for `arch` (not only those it keeps there)."""
    recorded = shipped.record_solution("ch05", shipped.triton_chapters()["ch05"], arch)
    configs = recorded.namespace["MATMUL_CONFIGS"]
    (launch,) = [l for l in recorded.launches if l.name == "matmul_kernel"]
    launch = crosscompile.RecordedLaunch(launch.name, launch.kernel, launch.args, launch.kwargs, tuple(configs))
    with crosscompile.quiet_triton():
        return list(zip(configs, crosscompile.build(launch, arch)))


# What the notebook says of the compiled configurations: the 128 x 256 x 64, 3-stage one takes 96 KiB on an A100 or
# an RTX 4090 and 144 KiB on an H100, and the last three need at most 72 KiB even on an H100.
FIRST_CONFIG_KIB = {"sm_80": 96, "sm_89": 96, "sm_90": 144}
LAST_THREE_KIB_ON_SM90 = 72


@pytest.mark.slow
@pytest.mark.parametrize("arch", [_one_worker("ch05", arch) for arch in ARCHS])
def test_chapter5_keeps_exactly_the_configurations_that_fit(arch, capsys):
    """The chapter's count of each configuration's shared memory against what Triton compiles: equal
    where tl.dot is pipelined on tensor cores (sm_80 to sm_90), an upper bound on sm_75; the
    configurations it keeps all fit, and at least two good ones are kept on 99 and 64 KiB parts; and the
    text's figures for this architecture (FIRST_CONFIG_KIB, LAST_THREE_KIB_ON_SM90).
    Up to 40 s on 2 cores without Triton's cache: every configuration of the chapter's autotune list compiled for the
    architecture."""
    rows = every_config(arch)
    if arch.name in FIRST_CONFIG_KIB:
        assert rows[0][1].shared // 1024 == FIRST_CONFIG_KIB[arch.name]
    if arch.name == "sm_90":
        assert max(b.shared for _, b in rows[3:]) == LAST_THREE_KIB_ON_SM90 * 1024
    with archs.targeting(arch):
        kept = ch05.configs_that_fit([c for c, _ in rows])
    with capsys.disabled():
        print(f"\n{arch.name} ({arch.max_shared_per_block // 1024} KiB): compiled / counted shared memory")
        for config, build in rows:
            print(f"  {ch05._describe_config(config):<40} {build.shared // 1024:>4} / "
                  f"{ch05.shared_memory_bytes(config, arch) // 1024:>4} KiB  {'kept' if config in kept else 'left out'}")
    for config, build in rows:
        counted = ch05.shared_memory_bytes(config, arch)
        if arch.name == "sm_75":
            assert counted >= build.shared
        else:
            assert counted == build.shared, (ch05._describe_config(config), counted, build.shared)
        if config in kept:
            assert not build.problems(arch), (ch05._describe_config(config), build.problems(arch))
    assert len(kept) >= 2
    if arch.max_shared_per_block <= 99 * 1024:
        assert sum(1 for c in kept if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] >= 128 * 128) >= 2


# ------------------------------------------------------------------------- one assembly a variant

def test_a_cross_compile_assembles_each_kernel_once_and_keeps_its_cache_entries_apart(tmp_path, monkeypatch):
    """Triton's own last stage (its ptxas run) is replaced by the assembly whose report the builds read
    (grader.cuda.resources.assemble): ptxas runs once a variant. The cubin of that stage is ptxas's without Triton's
    options, so the compile's cache entry is a different one from a plain compile's of the same kernel."""
    import triton
    import triton.language as tl
    from triton.backends.nvidia.compiler import CUDABackend

    real_make_cubin = CUDABackend.make_cubin

    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("LADDER_CACHE_DIR", str(tmp_path / "ladder"))
    assembled = []
    real = crosscompile.assemble
    monkeypatch.setattr(crosscompile, "assemble", lambda *a: assembled.append(a[1]) or real(*a))

    def refuse(*_):
        raise AssertionError("Triton ran its own ptxas in a cross-compile")

    monkeypatch.setattr(CUDABackend, "make_cubin", refuse)
    x = torch.empty(1000)
    arch = archs.by_name("sm_80")
    launch = crosscompile.RecordedLaunch("scale", scale, (x, 1000), {"BLOCK": 256}, ())
    (build,) = crosscompile.build(launch, arch)
    assert assembled == ["sm_80"] and build.usage.registers > 0
    entries = {p.name for p in (tmp_path / "triton").iterdir()}
    # The same kernel compiled without the replaced stage (Triton's own ptxas) is not the cross-compile's cache entry.
    monkeypatch.setattr(CUDABackend, "make_cubin", real_make_cubin)
    monkeypatch.setattr(crosscompile, "_assembled_by_report", lambda arch: contextlib.nullcontext())
    plain = crosscompile.compile_kernel(scale, (x, 1000), {"BLOCK": 256}, arch)
    assert plain.asm["cubin"] and {p.name for p in (tmp_path / "triton").iterdir()} - entries
