"""`ladder doctor`: this machine's GPU and versions, and what each chapter can do on a GPU architecture:
what runs, what is graded, and what cannot reach its bar there and why.

Without `--target` the architecture is this GPU's (none without a GPU); with `--target sm_75 sm_86 ...`
the same table is made for those, on any machine: every verdict comes from compiling probes for the
architecture (grader.harness.feasibility, grader.cuda.capabilities), the bars for it (grader/bars.toml),
and its limits (grader.cuda.archs). `--kernels` also compiles every kernel in solutions/ for it
(grader.notebooks.shipped) and reports each one's shared memory, registers and tensor-core
instructions.
"""

from __future__ import annotations

import json

from .. import chapters, config
from ..cuda import archs
from ..cuda.capabilities import CAPABILITIES, find
from ..cuda.crosscompile import quiet_triton
from ..cuda.gpu import arch_here, driver_version, gpu_info, gpu_or_reason, version_warnings, versions
from ..cuda.nvrtc import nvrtc_available
from ..cuda.toolkit import find_wmma_headers
from ..errors import LadderError
from ..harness.ceilings import ceilings
from ..harness.without_gpu import WHAT_STILL_WORKS
from ..harness.feasibility import table
from ..harness.quiet import captured_stderr
from . import shipped


# ------------------------------------------------------------------------------------- the report

def machine(remeasure: bool = False) -> dict:
    """This machine: versions (and those outside the tested ranges), CUDA headers, NVRTC, the GPU and
    its measured ceilings."""
    report: dict = {"versions": versions(), "version_warnings": version_warnings()}
    headers = find_wmma_headers()
    nvrtc_ok, nvrtc_what = nvrtc_available()
    report["cuda_headers"] = {"ok": headers.ok, "detail": headers.describe()}
    report["nvrtc_compile_only"] = {"ok": nvrtc_ok, "detail": nvrtc_what}
    info = gpu_info()
    if info is None:
        report["gpu"] = None
        report["no_gpu_reason"] = gpu_or_reason()[1]
        return report
    with captured_stderr():
        ceil = ceilings(remeasure=remeasure)
    report["gpu"] = {"name": info.name, "compute_capability": info.cc, "sms": info.sm_count,
                     "l2_mib": round(info.l2_bytes / 2**20, 1), "memory_gib": round(info.memory_bytes / 2**30, 1),
                     "driver": driver_version()}
    report["ceilings"] = {"copy_gbps": ceil.copy_gbps, "fp32_tflops": ceil.fp32_tflops,
                          "fp16_tflops": ceil.fp16_tflops, "fp8_tflops": ceil.fp8_tflops, "measured": ceil.measured}
    return report


def feasibility(arch: archs.Arch, kernels: bool = False) -> dict:
    """What each chapter can do on `arch`, from compiling for it."""
    with captured_stderr(), quiet_triton():
        found = {name: find(name, arch) for name in CAPABILITIES}
        rows = table(arch)
        notes = _chapter_notes(arch)
        compiled = _compiled_kernels(arch) if kernels else None
    out = {
        "arch": arch.name, "family": arch.family, "examples": arch.examples, "limits": arch.limits(),
        "capabilities": {name: {"present": f.present, "evidence": f.evidence} for name, f in found.items()},
        "bars": {r.key: {"chapter": r.chapter, "status": r.verdict.status, "bar": r.verdict.bar.bar,
                         "kind": r.verdict.bar.kind, "provisional": r.verdict.bar.provisional,
                         "baseline": r.verdict.bar.baseline, "graded": r.verdict.bar.graded,
                         "for_this_arch": r.verdict.bar.arch is not None, "reason": r.verdict.reason(),
                         "missing": [f.capability for f in r.verdict.missing]}
                 for r in rows},
        "notes": notes,
    }
    if compiled is not None:
        out["kernels"] = compiled
    return out


def _chapter_notes(arch: archs.Arch) -> dict[str, list[str]]:
    """Each chapter's own remarks on `arch` (a chapter module's `doctor_notes`), where solutions/ is here."""
    try:
        notebooks = shipped.chapter_notebooks()
    except LadderError:  # not in the course's repository: no solutions to read
        return {}
    notes = {}
    for name, nb in notebooks.items():
        hook = getattr(chapters.module(name), "doctor_notes", None)
        if hook is not None:
            try:
                notes[name] = hook(arch, shipped.solution_namespace(name, nb, arch))
            except LadderError as exc:  # say it, and go on with the other chapters
                notes[name] = [f"not checked: {exc}"]
    return notes


def _compiled_kernels(arch: archs.Arch) -> dict:
    """Every kernel of solutions/ compiled for `arch`: CUDA C through NVRTC, Triton by its launches."""
    cuda = []
    for b in shipped.cuda_builds(arch):
        entry = {"notebook": b.notebook, "source": b.source_name, "compiles": b.ok,
                 "error": b.error.splitlines()[0] if b.error else ""}
        if b.ok:
            entry["kernels"] = {name: {"registers": u.registers, "static_shared": u.static_shared,
                                       "spill_bytes": u.spill_bytes, "problems": b.problems(arch)[name]}
                                for name, u in b.usage.items()}
            entry["mma"] = b.tensor_core_ops()
        cuda.append(entry)
    triton = []
    for chapter in shipped.triton_chapters():
        for b in shipped.triton_build(chapter, arch).builds:
            triton.append({"chapter": chapter, "kernel": b.name, "variant": b.variant, "shared": b.shared,
                           "registers": b.usage.registers, "spill_bytes": b.usage.spill_bytes,
                           "tensor_core_ops": b.tensor_core_ops(), "problems": b.problems(arch)})
    return {"cuda": cuda, "triton": triton}


def report(targets: list[str] | None = None, remeasure: bool = False, kernels: bool = False) -> dict:
    """The whole report: this machine, and the table for each target (this GPU's by default)."""
    out = machine(remeasure) if not targets else {"versions": versions(), "version_warnings": version_warnings()}
    if targets:
        chosen = [archs.by_name(t) for t in targets]
    else:
        here = arch_here()
        chosen = [here] if here is not None else []
    try:
        out["feasibility"] = [feasibility(a, kernels) for a in chosen]
    except LadderError as exc:  # nothing to compile the probes with: say so rather than guess
        out["feasibility"], out["feasibility_error"] = [], str(exc)
    out["ungradable_policy"] = config.ungradable_policy()
    return out


# ------------------------------------------------------------------------------------- printing

_SHORT = {"graded": "graded", "reported": "reported", "not gradable": "NOT GRADABLE", "out of reach": "out of reach",
          "does not run": "does not run"}


def print_report(rep: dict, targets: bool) -> None:
    print("Kernel Ladder doctor")
    if not targets:
        gpu = rep.get("gpu")
        if gpu is None:
            print(f"  GPU            none: {rep['no_gpu_reason']}")
        else:
            print(f"  GPU            {gpu['name']}, compute capability {gpu['compute_capability']}, {gpu['sms']} SMs, "
                  f"{gpu['l2_mib']:g} MiB L2, {gpu['memory_gib']:g} GiB; driver {gpu['driver'] or 'unknown'}")
    for name, version in rep["versions"].items():
        print(f"  {name:<14} {version}")
    if not targets:
        print(f"  CUDA headers   {rep['cuda_headers']['detail']}")
        nvrtc = rep["nvrtc_compile_only"]
        print(f"  NVRTC          {'available' if nvrtc['ok'] else 'not available'}: {nvrtc['detail']} "
              "(compile-only checks without a GPU)")
    for warning in rep["version_warnings"]:
        print(f"  ! {warning}")
    if not targets and rep.get("gpu") is None:
        print(WHAT_STILL_WORKS)
        print("`ladder doctor --target sm_75 sm_80 sm_86 sm_89 sm_90` shows what each chapter can do on those GPUs.")
    if not targets and rep.get("ceilings"):
        c = rep["ceilings"]
        print("Ceilings of this GPU (cached; `ladder doctor --remeasure` measures again):")
        print(f"  copy bandwidth  {c['copy_gbps']:>8,.0f} GB/s   device-to-device, bytes read + written")
        print(f"  fp32 matmul     {c['fp32_tflops']:>8.1f} TFLOP/s torch.mm, TF32 off")
        print(f"  fp16 matmul     {c['fp16_tflops']:>8.0f} TFLOP/s torch.mm, tensor cores")
        if c.get("fp8_tflops"):
            print(f"  fp8 matmul      {c['fp8_tflops']:>8.0f} TFLOP/s torch._scaled_mm, e4m3 (chapter 9)")
        print("  (Reports quote these. No verdict rests on them: a copy-ceiling bar is graded against the copy "
              "ceiling measured again in each speed check, in the same rounds as the kernel.)")
    if rep["feasibility"]:
        print_feasibility(rep["feasibility"], rep["ungradable_policy"])
    if rep.get("feasibility_error"):
        print(f"What each chapter can do here was not checked: {rep['feasibility_error']}")


def bar_words(entry: dict) -> str:
    """A bar of the doctor's table in words: "2.00x torch.add", "0.60 of the copy ceiling"."""
    if entry.get("kind") == "copy-ceiling":
        return f"{entry['bar']:.2f} of the copy ceiling"
    return f"{entry['bar']:.2f}x {entry['baseline']}"


def print_feasibility(tables: list[dict], policy: str) -> None:
    names = [t["arch"] for t in tables]
    print(f"\nWhat each chapter can do on {', '.join(names)}: compiled for {'each' if len(names) > 1 else 'it'} "
          "just now, with this machine's Triton and NVRTC (no GPU needed)")
    for t in tables:
        print(f"  {t['arch']}, {t['family']}: {t['examples']}. {t['limits']}")
        for name, cap in t["capabilities"].items():
            print(f"    {'✓' if cap['present'] else '✗'} {name:<19} {cap['evidence']}")
    # One footnote per capability an architecture lacks: every bar that needs it points there.
    footnotes: dict[tuple[str, str], int] = {}
    cells: dict[str, list[str]] = {}
    for key in tables[0]["bars"]:
        for t in tables:
            entry = t["bars"][key]
            text = _SHORT[entry["status"]]
            if entry["for_this_arch"]:
                text = f"{text} {entry['bar']:.2f}{'' if entry.get('kind') == 'copy-ceiling' else 'x'}"
            marks = [footnotes.setdefault((t["arch"], m), len(footnotes) + 1) for m in entry["missing"]]
            if marks:
                text += " [" + ",".join(map(str, marks)) + "]"
            cells.setdefault(key, []).append(text)
    width = 2 + max(len(n) for n in [*names, *(c for row in cells.values() for c in row)])
    keys = 2 + max(len(key) for key in ["exercise", *cells])   # the longest exercise name and two spaces
    print(f"\n  {'exercise':<{keys}}{'bar (calibrated on an H100 or H200 unless marked)':<52}"
          + "".join(f"{n:<{width}}" for n in names))
    for key, row in cells.items():
        first = tables[0]["bars"][key]
        what = bar_words(first)
        what = (what[:47] + "...") if len(what) > 50 else what
        print(f"  {key:<{keys}}{what:<52}" + "".join(f"{c:<{width}}" for c in row))
    by_arch = {t["arch"]: t for t in tables}
    for (arch, capability), mark in footnotes.items():
        cap = by_arch[arch]["capabilities"][capability]
        print(f"  [{mark}] {arch} lacks {CAPABILITIES[capability].meaning}: {cap['evidence']}; "
              f"{CAPABILITIES[capability].consequence}.")
    print("  graded: the speed cell passes or fails against the bar; reported: a stretch goal, never graded; "
          "a bar with its value beside the verdict is that architecture's own (grader/bars.toml).")
    print("  Two kinds of bar: a speedup (\"x\") is your time against torch's baseline, both timed in the same run, so "
          "it is as hard as torch makes it on that GPU; a fraction \"of the copy ceiling\" is the bytes the "
          "operation must move over your time, against a device-to-device copy timed in the same rounds, so the "
          "same fraction is equally hard on every GPU, and such a bar needs nothing of an architecture but its "
          "memory.")
    provisional = sorted({k for t in tables for k, e in t["bars"].items() if e.get("provisional")})
    if provisional:
        print(f"  PROVISIONAL (not calibrated yet on any GPU: the value is a guess, not a measurement): "
              f"{', '.join(provisional)}.")
    if any(e["status"] == "not gradable" for t in tables for e in t["bars"].values()):
        print("  NOT GRADABLE: the speed cell measures and reports, then says why its bar is out of reach on that GPU; "
              f"the instructor's policy (LADDER_UNGRADABLE, now {policy!r}; docs/gpus.md) decides its points. "
              "Correctness is graded as everywhere.")
    for t in tables:
        for chapter, lines in t["notes"].items():
            for line in lines:
                print(f"  {t['arch']} {chapter}: {line}")
        if "kernels" in t:
            _print_kernels(t)


def _print_kernels(t: dict) -> None:
    arch = t["arch"]
    cuda = t["kernels"]["cuda"]
    print(f"\n  Kernels of solutions/ compiled for {arch}:")
    for entry in cuda:
        if not entry["compiles"]:
            print(f"    ✗ {entry['notebook']} {entry['source']}: {entry['error']}")
            continue
        for name, k in entry["kernels"].items():
            problems = "; ".join(k["problems"])
            print(f"    {'✗' if problems else '✓'} {entry['notebook']} {name}: {k['registers']} registers, "
                  f"{k['static_shared'] / 1024:g} KiB static shared, {k['spill_bytes']} B spilled, "
                  f"{entry['mma']} mma{'; ' + problems if problems else ''}")
    for b in t["kernels"]["triton"]:
        ops = ", ".join(f"{n} {op}" for op, n in b["tensor_core_ops"].items()) or "no tensor-core instructions"
        problems = "; ".join(b["problems"])
        print(f"    {'✗' if problems else '✓'} {b['chapter']} {b['kernel']} ({b['variant']}): "
              f"{b['shared'] / 1024:g} KiB shared, {b['registers']} registers, {b['spill_bytes']} B spilled, {ops}"
              f"{'; ' + problems if problems else ''}")


def run(targets: list[str] | None, remeasure: bool, kernels: bool, as_json: bool) -> int:
    rep = report(targets, remeasure, kernels)
    if as_json:
        print(json.dumps(rep, indent=2))
    else:
        print_report(rep, bool(targets))
    return 0
