"""What the chapters and the README say about GPUs: the claims found wrong in review stay gone, every
per-architecture limit they quote agrees with the architecture table, and the figures they quote
agree with the measurement records (assets/results/) and with the arithmetic that derives them."""

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from grader.cuda import archs
from grader.learner.cells import grade_id, source

SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
RELEASED = sorted((ROOT / "course").glob("*/*.ipynb"))
README = ROOT / "README.md"
RESULTS = ROOT / "assets" / "results" / "calibration"


def flat(text: str) -> str:
    """Text with every run of whitespace made one space: a claim reads the same however it wraps."""
    return " ".join(text.split())


def cells(nb: Path) -> dict[str, str]:
    return {grade_id(c) or c.get("id", ""): flat(source(c)) for c in json.loads(nb.read_text())["cells"]}


def chapter_cell(chapter: str, cell: str) -> str:
    (nb,) = (ROOT / "solutions").glob(f"{chapter}*/*.ipynb")
    return cells(nb)[cell]


# ------------------------------------------------------------------------- claims that were wrong

WRONG = {
    "3 to 4 TB/s that HBM and L2 deliver": "ch4: L2 reads ran at 7.5-7.8 TB/s on an H100, HBM at 3.0",
    "is all the loads allow": "ch4: torch.mm reached 655 TFLOP/s on an H100, past any such cap",
    "tiles without padding at 0.9 to 1.2": "ch2: the unpadded 32x8 tile measured 1.42x on an H200",
    "more loads in flight cannot help": "ch2: loads in flight took the unpadded tile from 0.89x to 1.42x",
    "128 fp32 lanes)": "ch3: an A100 has 64 FP32 lanes per SM, an H100 128",
    "multiply whole 16 × 16 tiles per instruction": "ch3: the instruction is mma.sync m16n8k16",
    "150 to 250 FLOPs per byte": "ch6: an H100 SXM's data sheet gives about 295",
    "which is several times faster": "ch6: L2 is about 2.5x HBM on an H100",
    "leaves part of the machine idle": "ch1: resident threads hide latency; occupancy is not idleness",
    "1,536 on many consumer GPUs": "ch2: 1,536 on 8.6 and 8.9, 1,024 on 7.5",
    "16 to 32 blocks depending on the GPU": "ch1: per architecture, 16, 24 or 32",
    "caps the kernel at 25 to 40 TFLOP/s": "ch4: 8 FLOPs per byte at the measured 3.0-4.2 TB/s is 24-34",
    "the same bar is fair on a laptop GPU": "ch1: bars were calibrated on an H100 and an H200 only",
    "means the same on a laptop GPU and on an H100": "README: bars were calibrated on an H100 and an H200 only",
}


@pytest.mark.parametrize("path", [*SOLUTIONS, *RELEASED, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_claims_found_wrong_in_review_are_gone(path):
    text = flat(path.read_text() if path.suffix == ".md" else " ".join(cells(path).values()))
    found = [f"{phrase!r} ({why})" for phrase, why in WRONG.items() if phrase in text]
    assert not found, f"{path.relative_to(ROOT)} still says:\n" + "\n".join(found)


# ------------------------------------------------------------------------- per-architecture limits

# Limits grader.cuda.archs does not hold, from the same source (CUDA C++ Programming Guide,
# "Technical Specifications per Compute Capability", and NVIDIA's architecture whitepapers).
FP32_LANES_PER_SM = {"sm_75": 64, "sm_80": 64, "sm_86": 128, "sm_89": 128, "sm_90": 128}

LIMITS = {
    "threads": {a.name: a.max_threads_per_sm for a in archs.ARCHS},
    "KiB": {a.name: a.max_shared_per_block // archs.KIB for a in archs.ARCHS},
    "blocks": {a.name: a.max_blocks_per_sm for a in archs.ARCHS},
    "lanes": FP32_LANES_PER_SM,
}
GPU_ARCH = {"T4": "sm_75", "A100": "sm_80", "A10": "sm_86", "L4": "sm_89", "H100": "sm_90", "H200": "sm_90"}

_ARCH = r"(?:compute capability )?\d\.\d\b|sm_\d\d\b|(?:A100|H100|H200|T4|L4|A10)\b"
_ARCHS = rf"(?:{_ARCH})(?: \([^)]*\))?(?:(?:, and |, | and | or |/)(?:{_ARCH})(?: \([^)]*\))?)*"
# "2,048 threads on compute capability 8.0 and 9.0", "99 KiB on 8.6 and 8.9", "1,024 on 7.5": a number,
# perhaps its unit, "on", then the architectures. A number without a unit takes the sentence's last one.
CLAIM = re.compile(rf"(?<![\d.,])(\d{{1,3}}(?:,\d{{3}})+|\d+)(?: (KiB|threads|blocks|FP32 lanes|fp32 lanes))? "
                   rf"on (?:an? )?({_ARCHS})")


def arch_names(listed: str) -> list[str]:
    names = []
    for token in re.findall(_ARCH, re.sub(r"\([^)]*\)", "", listed)):
        token = token.removeprefix("compute capability ")
        names.append(GPU_ARCH.get(token) or archs.by_name(token).name)
    return names


def limit_claims(text: str) -> list[tuple[str, int, list[str], str]]:
    """(quantity, number, architectures, the words) for every limit quoted per architecture."""
    found = []
    for sentence in re.split(r"(?<=[.;:])\s", flat(text)):
        unit = None
        for m in CLAIM.finditer(sentence):
            unit = (m.group(2) or "").split()[-1] if m.group(2) else unit
            if unit is not None:
                found.append((unit, int(m.group(1).replace(",", "")), arch_names(m.group(3)), m.group(0)))
    return found


def disagreements(text: str) -> list[str]:
    return [f"{words!r}: the table says {', '.join(f'{a} {LIMITS[unit][a]}' for a in names)}"
            for unit, number, names, words in limit_claims(text)
            if any(LIMITS[unit][a] != number for a in names)]


def test_the_claim_reader_catches_a_wrong_limit():
    wrong = "An SM holds at most 2,048 threads on compute capability 8.0 and 8.6, and 1,536 on 7.5."
    assert len(disagreements(wrong)) == 2
    right = ("It may use up to 64 KiB on compute capability 7.5, 99 KiB on 8.6 and 8.9, 163 KiB on 8.0 "
             "(A100) and 227 KiB on 9.0 (H100, H200). It has 64 FP32 lanes on an A100, 128 on sm_90.")
    assert [c[:3] for c in limit_claims(right)] == [
        ("KiB", 64, ["sm_75"]), ("KiB", 99, ["sm_86", "sm_89"]), ("KiB", 163, ["sm_80"]),
        ("KiB", 227, ["sm_90"]), ("lanes", 64, ["sm_80"]), ("lanes", 128, ["sm_90"])]
    assert not disagreements(right)


@pytest.mark.parametrize("path", [*SOLUTIONS, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_limit_quoted_per_architecture_agrees_with_the_table(path):
    text = path.read_text() if path.suffix == ".md" else "\n".join(cells(path).values())
    wrong = disagreements(text)
    assert not wrong, f"{path.relative_to(ROOT)}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("chapter, quantities", [
    ("01", {"threads", "blocks"}), ("02", {"threads", "KiB"}), ("03", {"KiB", "lanes"})])
def test_chapters_quote_their_limits_for_every_architecture(chapter, quantities):
    """Where a chapter quotes threads per SM, shared memory per block or FP32 lanes, it gives them for
    every architecture in the table (the reader above found them, so the check is not vacuous)."""
    (nb,) = (ROOT / "solutions").glob(f"{chapter}_*/*.ipynb")
    covered = {}
    for unit, _, names, _ in limit_claims("\n".join(cells(nb).values())):
        covered.setdefault(unit, set()).update(names)
    for unit in quantities:
        assert covered.get(unit) == set(LIMITS[unit]), f"chapter {chapter} quotes {unit} for {covered.get(unit)}"


# ------------------------------------------------------------------------- figures and their records

def record(folder: str) -> dict:
    (path,) = (RESULTS / folder).glob("*-calibration.json")
    return json.loads(path.read_text())


def rung_range(folder: str, bar_key: str, key: str) -> tuple[float, float]:
    data = record(folder)
    (rung,) = [r for r in data["rungs"] if r["bar_key"] == bar_key and r["rung"].endswith(f"({key})")]
    speedups = [run["speedup"] for run in rung["runs"]]
    return min(speedups), max(speedups)


# (chapter, cell, the quoted ratio, the record's folder, its bar, its rung): each ratio a notebook
# quotes from a calibration must lie within that rung's ten runs, rounded to two decimals.
QUOTED_RATIOS = [
    ("02", "speed-md", "0.47×", "ch02-h200", "2", "naive"),
    ("02", "speed-md", "1.42×", "ch02-h200", "2", "unpadded_tile"),
    ("02", "speed-md", "1.55×", "ch02-h200", "2", "one_per_thread_tile"),
    ("02", "speed-md", "3.11×", "ch02-h200", "2", "solution"),
    ("02", "nopad-after", "1.42×", "ch02-h200", "2", "unpadded_tile"),
    ("04", "wmma-speed-md", "0.14×", "ch04-h200", "4", "serial_loads"),
    ("04", "wmma-speed-md", "0.28×", "ch04-h200", "4", "solution"),
    ("04", "wmma-speed-md", "0.34×", "ch04-h200", "4", "register_prefetch"),
    ("04", "wmma-speed-md", "0.31×", "ch04-h200", "4-stretch", "solution stretch"),
    ("04", "wmma-speed-md", "0.88×", "ch05-h200", "5a", "solution"),
]


@pytest.mark.parametrize("chapter, cell, quote, folder, bar, rung", QUOTED_RATIOS)
def test_quoted_ratios_match_the_calibration_records(chapter, cell, quote, folder, bar, rung):
    assert quote in chapter_cell(chapter, cell), f"chapter {chapter} {cell} no longer quotes {quote}"
    low, high = rung_range(folder, bar, rung)
    assert round(low - 0.005, 2) <= float(quote.rstrip("×")) <= round(high + 0.005, 2), (
        f"{quote} is outside the {rung} rung's runs in {folder} ({low:.3f} to {high:.3f})")


# Ceilings `ladder doctor` measured, as recorded with the calibrations; the L2 figure and the data-sheet
# figures are not in a record file: L2-resident reads (8-32 MiB buffers, `__ldcg` float4) on an H100
# are in COURSE.md's measured facts, and H100 SXM's data sheet gives 989 TFLOP/s dense fp16, 67 fp32, 3.35 TB/s.
H100 = record("ch01-h100")["ceilings"]
H200 = record("ch02-h200")["ceilings"]
L2_H100_TBPS = (7.5, 7.8)
SHEET_TFLOPS_FP16, SHEET_TFLOPS_FP32, SHEET_TBPS = 989, 67, 3.35


def numbers(text: str, pattern: str) -> list[float]:
    m = re.search(pattern, text)
    assert m, f"not found: {pattern!r}"
    return [float(g.replace(",", "")) for g in m.groups()]


@pytest.mark.parametrize("chapter, cell, pattern, expected", [
    # ch4: what 8 and 64 FLOPs per byte allow from HBM and from L2, and the step's shared-memory clocks
    ("04", "naive-speed-after", r"would allow (\d+) to (\d+) TFLOP/s",
     (8 * H100["copy_gbps"] / 1e3, 8 * H200["copy_gbps"] / 1e3)),
    ("04", "wmma-speed-md", r"would allow about (\d+) TFLOP/s", (64 * H100["copy_gbps"] / 1e3,)),
    ("04", "wmma-speed-md", r"ran at (\d\.\d) to (\d\.\d) TB/s", L2_H100_TBPS),
    ("04", "wmma-speed-md", r"enough for (\d+) to (\d+) TFLOP/s", tuple(64 * t for t in L2_H100_TBPS)),
    ("04", "wmma-speed-md", r"`torch.mm` reached (\d+) TFLOP/s", (H100["fp16_tflops"],)),
    ("04", "wmma-speed-md", r"read (\d+) KiB of fragments", (8 * 6 * 16 * 16 * 2 / 1024,)),
    ("04", "wmma-speed-md", r"per clock per SM: (\d+) clocks", (8 * 6 * 16 * 16 * 2 / 128,)),
    ("04", "wmma-speed-md", r"are ([\d,]+) multiply-adds, (\d+) clocks", (8 * 8 * 16 ** 3, 8 * 8 * 16 ** 3 / 2048)),
    ("04", "tensor-core-after", r"measured (\d+) against ([\d.]+) TFLOP/s, about (\d+)×",
     (H100["fp16_tflops"], H100["fp32_tflops"], H100["fp16_tflops"] / H100["fp32_tflops"])),
    ("04", "tensor-core-after", r"reached (\d+)% of the fp32 units' rated (\d+) TFLOP/s but (\d+)% of the tensor cores' (\d+)",
     (100 * H100["fp32_tflops"] / SHEET_TFLOPS_FP32, SHEET_TFLOPS_FP32, 100 * H100["fp16_tflops"] / SHEET_TFLOPS_FP16,
      SHEET_TFLOPS_FP16)),
    # ch6: FLOPs per byte of the machines, and what 128 FLOPs per byte allow from L2
    ("06", "triton-md", r"about (\d+) \((\d+) TFLOP/s dense over ([\d.]+) TB/s\)",
     (SHEET_TFLOPS_FP16 / SHEET_TBPS, SHEET_TFLOPS_FP16, SHEET_TBPS)),
    ("06", "triton-md", r"about (\d+) on an H100", (H100["fp16_tflops"] / H100["copy_gbps"] * 1e3,)),
    ("06", "triton-md", r"(\d+) on an H200 \((\d+) over ([\d.]+)\)",
     (H200["fp16_tflops"] / H200["copy_gbps"] * 1e3, H200["fp16_tflops"], H200["copy_gbps"] / 1e3)),
    ("06", "triton-md", r"delivered (\d\.\d) to (\d\.\d) TB/s", L2_H100_TBPS),
    ("06", "triton-md", r"allows (\d+) to ([\d,]+) TFLOP/s", tuple(128 * t for t in L2_H100_TBPS)),
])
def test_derived_figures_match_their_arithmetic(chapter, cell, pattern, expected):
    quoted = numbers(chapter_cell(chapter, cell), pattern)
    assert quoted == pytest.approx(list(expected), rel=0.03), f"chapter {chapter} {cell}: {pattern}"


def test_records_name_the_gpu_they_were_measured_on():
    for folder, gpu in (("ch01-h100", "H100"), ("ch02-h200", "H200"), ("ch04-h200", "H200"), ("ch05-h200", "H200")):
        assert gpu in record(folder)["gpu"], folder
