"""compute-sanitizer's log, read: each error found, grouped by problem, and pointed back at the learner's
own line (the kernel's CUDA string, or the notebook cell of a Triton kernel) through the runner's report."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field


# ------------------------------------------------------------------------- parsing the log

@dataclass
class Location:
    function: str
    file: str | None = None
    line: int | None = None


@dataclass
class Finding:
    tool: str
    category: str        # "memory", "race", "barrier", "device" (other device errors), "api" (a CUDA call failed)
    severity: str        # "error" or "warning"
    kind: str            # the sanitizer's headline, e.g. "Invalid __global__ write of size 4 bytes"
    kernel: str | None = None
    locations: list[Location] = field(default_factory=list)
    accesses: list[str] = field(default_factory=list)   # racecheck: "Write", "Read" of each location
    thread: str | None = None
    block: str | None = None
    details: list[str] = field(default_factory=list)
    count: int = 1       # hazards (racecheck) or repeats of the same error at the same place
    # Filled in by map_to_learner: where in the learner's code, and that line's text.
    where: str | None = None
    code: str | None = None
    line: int | None = None
    file: str | None = None
    sites: list[dict] = field(default_factory=list)      # racecheck: each access in the learner's code
    exercises: list[str] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return self.category != "api"


@dataclass
class ParsedLog:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)        # sanitizer lines that are not errors in kernels
    error_summary: int | None = None                     # "ERROR SUMMARY: N errors"
    hazard_summary: tuple[int, int] | None = None        # racecheck: (errors, warnings)


_PREFIX = "========="
_HEX_AT = re.compile(r"^(?P<func>.+?)\+0x[0-9a-fA-F]+(?: in (?P<file>\S.*?):(?P<line>\d+))?$")
_OLD_AT = re.compile(r"^0x[0-9a-fA-F]+ in (?:(?P<file>[^:\s][^:]*?):(?P<line>\d+):)?(?P<func>.+)$")
_HAZARDS = re.compile(r"\s*\[(?P<n>[\d,]+) hazards?\]\s*$")
_ACCESS = re.compile(r"(?P<access>Read|Write|Atomic|Barrier|Async\w*)\s+access at (?P<loc>.+)$", re.I)
_THREAD_AT = re.compile(r"(?P<access>Read|Write|Atomic)\s+Thread\s+\((?P<thread>[^)]*)\)\s+at (?P<loc>.+)$", re.I)
_BY_THREAD = re.compile(r"by thread \((?P<thread>[^)]*)\) in block \((?P<block>[^)]*)\)")
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(?P<n>[\d,]+) errors?")
_IN_BLOCK = re.compile(r"in block \((?P<block>[^)]*)\)")
# A failed CUDA call that means a kernel crashed (launch failure, illegal address, ...).
CRASH = re.compile(r"LaunchFailure|IllegalAddress|MisalignedAddress|IllegalInstruction|Assert|error 7(?:0\d|1\d)",
                    re.I)
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:.*?\((?P<e>\d+) errors?, (?P<w>\d+) warnings?\)")
_HARDWARE = ("illegal", "misaligned", "out-of-range", "stack overflow", "invalid pc", "malloc/free", "assert",
             "uninitialized", "hardware exception", "exception")


def parse_location(text: str) -> Location | None:
    """`kernel+0x70 in file.cu:12` (CUDA 12 and later), `kernel+0x70` (no line info), or the older
    `0x70 in file.cu:12:kernel` / `0x70 in kernel`."""
    text = _HAZARDS.sub("", text.strip())
    m = _OLD_AT.match(text)
    if m:
        return Location(m["func"].strip(), m["file"], int(m["line"]) if m["line"] else None)
    m = _HEX_AT.match(text)
    if m:
        return Location(m["func"].strip(), m["file"], int(m["line"]) if m["line"] else None)
    return None


def short_name(function: str) -> str:
    """`void ns::kern<int>(float *, int)` -> `kern`; `vector_add` stays `vector_add`."""
    name, depth = "", 0
    for ch in function:
        if ch == "(" and depth == 0 and name:
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            name += ch
    name = name.strip().split()[-1] if name.strip() else function
    return name.split("::")[-1]


def _blocks(log: str) -> list[list[str]]:
    """Group the log's lines: a headline (one space after the prefix) and its indented details."""
    blocks: list[list[str]] = []
    for raw in log.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        rest = raw[len(_PREFIX):]
        if not rest.strip():
            blocks.append([])             # a blank line: the end of a block
            continue
        indent = len(rest) - len(rest.lstrip(" "))
        if indent <= 1 or not blocks or not blocks[-1]:
            blocks.append([rest.strip()])
        else:
            blocks[-1].append(rest.strip())
    return [b for b in blocks if b]


def _classify(head: str) -> tuple[str, str] | None:
    """(category, severity) of a headline, or None when it is not an error in a kernel or a call."""
    low = head.lower()
    severity = "warning" if low.startswith(("warning", "warn")) else "error"
    if "race reported" in low or "hazard detected" in low:
        return "race", severity
    if "barrier error" in low or low.startswith("invalid arguments") or "synccheck" in low:
        return "barrier", severity
    if low.startswith("invalid __") or low.startswith("invalid ") and " of size " in low:
        return "memory", "error"
    if low.startswith("program hit") or "on cuda api call" in low:
        return "api", "error"
    return None


def parse_log(log: str, tool: str) -> ParsedLog:
    """Everything compute-sanitizer reported: errors in kernels, failed CUDA calls, its summaries."""
    parsed = ParsedLog()
    for block in _blocks(log):
        head, body = block[0], block[1:]
        m = _SUMMARY.search(head)
        if m and "not printed" not in head:
            parsed.error_summary = int(m["n"].replace(",", ""))
            continue
        if m:   # "ERROR SUMMARY: N errors were not printed ..."
            parsed.notes.append(head)
            continue
        m = _RACE_SUMMARY.search(head)
        if m:
            parsed.hazard_summary = (int(m["e"]), int(m["w"]))
            continue
        if head.startswith(("COMPUTE-SANITIZER", "LEAK SUMMARY")):
            continue
        kind = _classify(head)
        has_location = any(l.startswith("at ") for l in body) or " access at " in head
        if kind is None and has_location:
            low = head.lower()
            kind = ("device", "error") if any(w in low for w in _HARDWARE) or tool != "racecheck" else None
        if kind is None:
            parsed.notes.append(" ".join(block)[:300])
            continue
        parsed.findings.append(_finding(tool, kind, head, body))
    return parsed


def _finding(tool: str, kind: tuple[str, str], head: str, body: list[str]) -> Finding:
    category, severity = kind
    clean = re.sub(r"^(error|warning|warn)\s*:\s*", "", head, flags=re.I).strip()
    f = Finding(tool, category, severity, clean)
    frames: list[Location] = []
    hazards = 0
    # racecheck's headline names the first access: "Race reported between Write access at K+0x10 in f.cu:12".
    for line in [head, *body]:
        n = _HAZARDS.search(line)
        m = _ACCESS.search(line)
        if m and category == "race":
            loc = parse_location(m["loc"])
            if loc:
                frames.append(loc)
                f.accesses.append(m["access"].capitalize())
            if n:
                hazards += int(n["n"].replace(",", ""))
            continue
        m = _THREAD_AT.search(line)
        if m:
            loc = parse_location(m["loc"])
            if loc:
                frames.append(loc)
                f.accesses.append(m["access"].capitalize())
                f.thread = f.thread or m["thread"]
            continue
        if line is head:
            m = _IN_BLOCK.search(line)
            if m:
                f.block = m["block"]
            continue
        if line.startswith("at "):
            loc = parse_location(line[3:])
            if loc:
                frames.append(loc)
            continue
        if line.startswith("Device Frame:"):
            loc = parse_location(line[len("Device Frame:"):])
            if loc:
                frames.append(loc)
            continue
        m = _BY_THREAD.search(line)
        if m:
            f.thread, f.block = m["thread"], m["block"]
            continue
        if line.startswith(("Saved host backtrace", "Host Frame", "in /", "in ")) or not line:
            continue
        if len(f.details) < 3:
            f.details.append(line)
    if category == "race":
        f.kind = "race between " + " and ".join(dict.fromkeys(a.lower() for a in f.accesses)) + " accesses" \
            if f.accesses else f.kind
        hazard_word = re.search(r"Potential (\w+) hazard", clean)
        if hazard_word:
            f.kind = f"{hazard_word.group(1)} hazard"
    f.locations = frames
    f.count = hazards or 1
    # The kernel is the outermost frame: the last device frame, else where the error happened.
    kernel_frames = [l for l in frames if l.function]
    if kernel_frames:
        f.kernel = short_name(kernel_frames[-1].function if category != "race" else kernel_frames[0].function)
    return f


# ---------------------------------------------------------------- back to the learner's lines

def _cell_offsets(manifest: dict) -> dict[str, tuple[str, int]]:
    """For each CUDA kernel: (cell file, line offset of its source's first line) when a cell holds it."""
    found = {}
    for name, k in manifest.get("cuda_kernels", {}).items():
        source = k.get("source") or ""
        if not source.strip():
            continue
        for cell_file, text in manifest.get("cell_sources", {}).items():
            pos = text.find(source)
            if pos >= 0:
                found[name] = (cell_file, text.count("\n", 0, pos))
                break
    return found


def _grade_ids(manifest: dict) -> dict[str, str]:
    return {c["file"]: c["grade_id"] for c in manifest.get("cells", [])}


class LearnerCode:
    """The learner's code as the runner saw it: CUDA kernels' sources and the notebook's cells."""

    def __init__(self, manifest: dict):
        self.manifest = manifest
        self.cuda = manifest.get("cuda_kernels", {})
        self.cuda_files = {k["file"]: name for name, k in self.cuda.items()}
        self.cells = manifest.get("cell_sources", {})
        self.offsets = _cell_offsets(manifest)
        self.grade_ids = _grade_ids(manifest)

    def site(self, loc: Location) -> dict | None:
        """{"file", "line", "where", "code"} when `loc` is in the learner's code, else None."""
        if not loc.file or loc.line is None:
            return None
        base = os.path.basename(loc.file)
        if base in self.cuda_files:
            name = self.cuda_files[base]
            lines = (self.cuda[name].get("source") or "").splitlines()
            where = f"{self.cuda[name].get('where') or f'the source of `{name}`'} line {loc.line}"
            if name in self.offsets:
                cell_file, offset = self.offsets[name]
                where += f" (cell '{self.grade_ids.get(cell_file, cell_file)}', line {offset + loc.line})"
        elif base in self.cells:
            lines = self.cells[base].splitlines()
            where = f"cell '{self.grade_ids.get(base, base)}', line {loc.line}"
        else:
            return None
        code = lines[loc.line - 1].strip() if 0 < loc.line <= len(lines) else None
        return {"file": base, "line": loc.line, "where": where, "code": code}


def map_to_learner(finding: Finding, manifest: dict | LearnerCode) -> None:
    """Point the finding at the learner's own lines: .where/.code/.file/.line from the first frame in
    their code; for races, .sites holds every access that is in their code."""
    code = manifest if isinstance(manifest, LearnerCode) else LearnerCode(manifest)
    accesses = finding.accesses + [""] * (len(finding.locations) - len(finding.accesses))
    for access, loc in zip(accesses, finding.locations):
        site = code.site(loc)
        if site is None:
            continue
        if finding.where is None:
            finding.file, finding.line, finding.where, finding.code = site["file"], site["line"], site["where"], \
                site["code"]
        if access:
            finding.sites.append({"access": access.lower(), **site})
    if finding.kernel:
        finding.exercises = [f"{e['key']} {e['title']}" for e in code.manifest.get("exercises", [])
                             if finding.kernel in e.get("kernels", [])]


def learner_kernels(manifest: dict) -> set[str]:
    return set(manifest.get("cuda_kernels", {})) | set(manifest.get("triton_kernels", {}))


def group_findings(findings: list[Finding]) -> list[Finding]:
    """One entry per problem: the same kind of error, in the same kernel, at the same lines."""
    groups: dict[tuple, Finding] = {}
    for f in findings:
        key = (f.category, f.kind, f.kernel, tuple((l.file, l.line) for l in f.locations[:2]))
        if key in groups:
            groups[key].count += f.count
        else:
            groups[key] = f
    return list(groups.values())


