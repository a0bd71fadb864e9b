"""`ladder doctor --target`: the feasibility table for the five architectures the course names, made on
any machine (no GPU) from compiling for each, and the warnings about untested library versions."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from grader.cuda import gpu

TARGETS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]


def _doctor(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.cli", "doctor", "--target", *TARGETS, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=900, env=env)


@pytest.fixture(scope="module")
def tables() -> dict:
    proc = _doctor("--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    return {t["arch"]: t for t in report["feasibility"]}


def test_every_target_gets_a_table(tables):
    assert list(tables) == TARGETS
    for t in tables.values():
        assert set(t["capabilities"]) == {"tensor-core tl.dot", "WMMA", "cp.async", "TMA", "FP8 tensor cores",
                                          "block-scaled MMA"}
        assert {"1a", "4", "4-stretch", "5a", "5b", "6", "6-causal", "9a", "9b", "9c-stretch"} <= set(t["bars"])


def test_on_sm75_triton_speed_is_not_gradable_because_tl_dot_compiles_to_fma(tables):
    t = tables["sm_75"]
    tl_dot = t["capabilities"]["tensor-core tl.dot"]
    assert not tl_dot["present"] and "fma.rn.f32" in tl_dot["evidence"] and "no mma" in tl_dot["evidence"]
    for key in ("5a", "5b", "6"):
        entry = t["bars"][key]
        assert entry["status"] == "not gradable" and entry["missing"] == ["tensor-core tl.dot"], (key, entry)
        assert "FMA" in entry["reason"] and "no correct Triton kernel can reach" in entry["reason"]
    for key in ("5a-stretch", "6-stretch"):
        assert t["bars"][key]["status"] == "out of reach"
    # Timed against the learner's own launcher: reachable on any GPU.
    assert t["bars"]["6-causal"]["status"] == "graded"


def test_on_sm75_the_cp_async_stretch_does_not_run(tables):
    t = tables["sm_75"]
    assert not t["capabilities"]["cp.async"]["present"]
    assert "requires .target sm_80" in t["capabilities"]["cp.async"]["evidence"]
    stretch = t["bars"]["4-stretch"]
    assert stretch["status"] == "does not run" and stretch["missing"] == ["cp.async"]
    assert t["bars"]["4"]["status"] == "graded" and t["capabilities"]["WMMA"]["present"]


@pytest.mark.parametrize("arch", TARGETS[1:])
def test_from_sm80_on_every_bar_is_graded_or_reported(tables, arch):
    t = tables[arch]
    # TMA (chapter 5's Hopper rung) from sm_90 on: below it that stretch goal does not run. FP8 (chapter 9) from
    # sm_89 on; tensor cores that apply MX block scales on none of these.
    lacking = {name for name, c in t["capabilities"].items() if not c["present"]}
    fp8 = arch in ("sm_89", "sm_90")
    assert lacking == {"block-scaled MMA"} | (set() if arch == "sm_90" else {"TMA"}) | (set() if fp8 else
                                                                                      {"FP8 tensor cores"}), lacking
    statuses = {key: e["status"] for key, e in t["bars"].items()}
    if arch != "sm_90":
        assert statuses.pop("5a-hopper") == "does not run"
    chapter_9 = {key: statuses.pop(key) for key in ("9a", "9a-copy", "9b", "9c-stretch")}
    assert chapter_9 == ({"9a": "graded", "9a-copy": "graded", "9b": "graded", "9c-stretch": "out of reach"} if fp8 else
                         dict.fromkeys(chapter_9, "does not run")), chapter_9
    assert set(statuses.values()) == {"graded", "reported"}
    tensor_cores = "wgmma" if arch == "sm_90" else "mma.sync"
    assert tensor_cores in t["capabilities"]["tensor-core tl.dot"]["evidence"]


def test_the_99_kib_family_has_its_own_5a_bar(tables):
    for arch in ("sm_86", "sm_89"):
        entry = tables[arch]["bars"]["5a"]
        assert entry["for_this_arch"] and entry["bar"] == pytest.approx(0.55)
    assert not tables["sm_90"]["bars"]["5a"]["for_this_arch"] and tables["sm_90"]["bars"]["5a"]["bar"] == 0.75


def test_chapter_9_says_where_its_kernels_run_and_why(tables):
    for arch in ("sm_75", "sm_80", "sm_86"):
        fp8 = tables[arch]["capabilities"]["FP8 tensor cores"]
        assert not fp8["present"] and "fp8e4nv not supported in this architecture" in fp8["evidence"]
        assert "interpreter" in tables[arch]["notes"]["ch09"][0]
        assert tables[arch]["bars"]["9b"]["status"] == "does not run"
    assert "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3" in tables["sm_90"]["capabilities"]["FP8 tensor cores"]["evidence"]
    assert "e4m3.e4m3" in tables["sm_89"]["capabilities"]["FP8 tensor cores"]["evidence"]
    assert "sm_90 only" in tables["sm_89"]["notes"]["ch09"][0] and not tables["sm_90"]["notes"].get("ch09")
    scaled = tables["sm_90"]["bars"]["9c-stretch"]
    assert scaled["status"] == "out of reach" and "bf16 MMA" in scaled["reason"]


def test_chapter_5_lists_the_configurations_each_architecture_keeps(tables):
    assert "6 of the solution's 6 configurations fit 99 KiB" in tables["sm_86"]["notes"]["ch05"][0]
    assert "3 of the solution's 6 configurations fit 64 KiB" in tables["sm_75"]["notes"]["ch05"][0]


def test_the_limits_come_from_the_architecture_table(tables):
    assert "1,024 threads per SM, 64 KiB" in tables["sm_75"]["limits"]
    assert "1,536 threads per SM, 99 KiB" in tables["sm_89"]["limits"]
    assert "2,048 threads per SM, 227 KiB" in tables["sm_90"]["limits"]


def test_the_printed_table_marks_what_is_not_gradable_and_says_why(tmp_path):
    from grader.harness.bars import load_bars

    # An instructor's override leaves one bar provisional, so that the table has one to name.
    override = tmp_path / "bars.toml"
    override.write_text('["10-stretch"]\nprovisional = "a starting value, not calibrated"\n')
    proc = _doctor(env={**os.environ, "LADDER_BARS": str(override)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "NOT GRADABLE [" in out and "does not run [" in out and "graded 0.55x" in out
    assert "sm_75 lacks tensor cores for Triton's tl.dot on fp16" in out
    assert "LADDER_UNGRADABLE" in out
    # both kinds of bar explained, a copy-ceiling bar shown as a fraction, a provisional bar named
    fraction = f"{load_bars(None)['10a'].bar:.2f} of the copy ceiling"
    assert "Two kinds of bar" in out and fraction in out and "PROVISIONAL" in out and "10-stretch" in out
    assert proc.stderr == "", proc.stderr
    # every exercise's name ends in its own column, however long (6-stretch-fast-d64 ran into its bar's)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("  exercise "))
    column = lines[header].index("bar (calibrated")
    rows = [line for line in lines[header + 1:] if line.startswith("  ") and not line.startswith("  [")]
    rows = rows[:next(i for i, line in enumerate(rows) if line.startswith("  graded: "))]
    assert len(rows) > 20 and any(len(row.split()[0]) > 11 for row in rows)
    for row in rows:
        key = row.split()[0]
        assert row[column - 2:column] == "  " and row[2:column].strip() == key and row[column] != " ", row


def test_a_copy_ceiling_bar_is_graded_on_every_architecture(tables):
    """Chapter 10's bars are fractions of each GPU's own copy ceiling and need no capability: graded on all five,
    sm_75 included, where the Triton chapters timed against torch's tensor cores are not."""
    for arch, t in tables.items():
        for key in ("10a", "10b"):
            entry = t["bars"][key]
            assert (entry["kind"], entry["status"], entry["missing"]) == ("copy-ceiling", "graded", []), (arch, key)


def test_an_unknown_target_is_refused():
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "doctor", "--target", "sm_61"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    as_json = subprocess.run([sys.executable, "-m", "grader.cli", "doctor", "--json", "--target", "sm_99"],
                             capture_output=True, text=True, cwd=ROOT)
    answer = json.loads(as_json.stdout)   # --json answers in JSON, a refusal too
    assert as_json.returncode == 2 and "invalid choice: 'sm_99'" in answer["error"] and answer["reason"], as_json


# ------------------------------------------------------------------------- versions

def test_the_installed_versions_are_in_the_tested_ranges():
    assert gpu.version_warnings() == []


def test_a_version_outside_its_range_is_warned_about(monkeypatch):
    declared = ['torch<2.14,>=2.11', 'triton<3.10,>=3.6; platform_system == "Linux"', 'cupy-cuda12x<15,>=14',
                'pytest>=99; extra == "dev"']
    monkeypatch.setattr(gpu.metadata, "requires", lambda dist: declared)
    versions = {"torch": "2.9.1+cu128", "triton": "3.5.0", "cupy-cuda13x": "13.6.0", "pytest": "8.0"}
    monkeypatch.setattr(gpu, "_version", lambda dist: versions.get(dist))
    warnings = gpu.version_warnings()
    assert any(w.startswith("torch 2.9.1+cu128 is outside the tested range torch<2.14,>=2.11") for w in warnings)
    assert any(w.startswith("triton 3.5.0 is outside") for w in warnings) == sys.platform.startswith("linux")
    # CuPy's CUDA 13 build is held to the range declared for the CUDA 12 one.
    assert any(w.startswith("cupy-cuda13x 13.6.0 is outside the tested range cupy-cuda12x") for w in warnings)
    assert not any("pytest" in w for w in warnings), "a dev extra is not a requirement of the course"


def test_the_ranges_are_declared_once_and_cap_what_the_grader_reaches_into():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for package in ("torch", "triton", "cupy-cuda12x", "nbgrader", "nbclient"):
        spec = next(d for d in deps if d.startswith(package))
        assert ">=" in spec and "<" in spec, f"{spec}: a tested range has both ends"
