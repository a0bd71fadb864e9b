"""`ladder check --sanitize`: run compute-sanitizer over the runner (grader.sanitizer.runner) once per
tool with a time limit, read its log (grader.sanitizer.logs), and print a summary per notebook. Any
sanitizer error makes the exit status nonzero."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from .. import chapters
from ..errors import LadderError
from ..learner import cells as nbcells
from .logs import CRASH, Finding, LearnerCode, group_findings, map_to_learner, parse_log

SCHEMA = "kernel-ladder.sanitize/1"
TOOLS = ("memcheck", "racecheck", "synccheck")
ERROR_EXITCODE = 86          # compute-sanitizer's exit status when it found errors (--error-exitcode)
PRINT_LIMIT = 50             # errors printed per run: the summary groups them by kernel line anyway
DEFAULT_TIMEOUT_S = 900      # per tool and notebook: startup, compiles and small launches, instrumented
SHOWN_PER_TOOL = 3           # distinct problems printed per tool in the text summary
_ROOT = Path(__file__).resolve().parents[2]

def tools_for(chapter: str | None, asked: Iterable[str] | None = None) -> tuple[str, ...]:
    """The tools asked for, else the chapter's own choice (its SANITIZER_TOOLS), else all three."""
    if asked:
        return tuple(dict.fromkeys(asked))
    if chapter in chapters.names():
        return tuple(getattr(chapters.module(chapter), "SANITIZER_TOOLS", TOOLS))
    return TOOLS


# ------------------------------------------------------------------ finding compute-sanitizer

def find_sanitizer() -> str | None:
    """compute-sanitizer from a CUDA toolkit, PATH or NVIDIA's wheel (grader.cuda.toolkit)."""
    from ..cuda.toolkit import tool_paths

    found = tool_paths("compute-sanitizer")
    return found[0] if found else None


def unavailable_reason() -> str | None:
    """One line on why sanitizing cannot run here and what still works, or None when it can."""
    from ..cuda.gpu import gpu_or_reason
    from ..harness.without_gpu import interpreted_phrase

    ok, why = gpu_or_reason()
    if not ok:
        return (f"cannot sanitize here: {why}, and compute-sanitizer checks kernels while they run on an NVIDIA "
                f"GPU. What still works here: `ladder check NOTEBOOK` grades as usual ({interpreted_phrase()} on "
                "the CPU, through Triton's interpreter), and `ladder compile NOTEBOOK` checks that CUDA kernels compile.")
    if find_sanitizer() is None:
        return ("cannot sanitize here: compute-sanitizer was not found (looked on PATH, in $CUDA_HOME/bin, "
                "$CUDA_PATH/bin and /usr/local/cuda/bin, and for the nvidia-cuda-sanitizer-api wheel); it comes "
                "with the CUDA toolkit, or `pip install nvidia-cuda-sanitizer-api-cu12`. Everything else works: "
                "`ladder check NOTEBOOK` grades as usual.")
    return None


class SanitizerUnavailable(LadderError):
    """No GPU, or no compute-sanitizer: the message says which, and what still works."""


def sanitizer_version(sanitizer: str) -> str:
    try:
        out = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown version"
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    return lines[-1] if lines else "unknown version"


# --------------------------------------------------------------------- the command line, the env

def build_command(tool: str, sanitizer: str, notebook: Path, report: Path, log: Path,
                  python: str = sys.executable) -> list[str]:
    """compute-sanitizer with one tool, wrapping the runner on one notebook."""
    if tool not in TOOLS:
        raise LadderError(f"unknown sanitizer tool {tool!r}: choose from {', '.join(TOOLS)}")
    cmd = [sanitizer, "--tool", tool,
           "--log-file", str(log),               # the report, apart from the program's own output
           "--error-exitcode", str(ERROR_EXITCODE),
           "--print-limit", str(PRINT_LIMIT),
           "--require-cuda-init", "no",          # a notebook with nothing written may never touch the GPU
           "--leak-check", "no"]                 # the grader's own tensors outlive the checks: not leaks
    if tool == "memcheck":
        cmd += ["--padding", "512"]              # a gap after each allocation: overruns land in it
    return cmd + [python, "-m", "grader.sanitizer.runner", str(notebook), "--report", str(report)]


def sanitize_env(triton_cache: Path, base: dict | None = None) -> dict:
    """The runner's environment: caching allocators off, line info on, Triton on the GPU."""
    env = dict(os.environ if base is None else base)
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"   # each tensor its own cudaMalloc (CuPy: the runner)
    env["CUDA_LAUNCH_BLOCKING"] = "1"             # errors surface at the launch that caused them
    env["TRITON_CACHE_DIR"] = str(triton_cache)   # fresh: cached kernels carry other files' line info
    env["PYTHONUNBUFFERED"] = "1"
    for name in ("TRITON_INTERPRET", "TRITON_DISABLE_LINE_INFO", "LADDER_FORCE_NO_GPU"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


# --------------------------------------------------------------------------------- the parent

@dataclass
class ToolRun:
    tool: str
    status: str           # "clean", "errors", "timed-out", "crashed", "sanitizer-failed"
    seconds: float
    exit_code: int | None
    errors: int           # errors the sanitizer counted (its summary), or findings parsed
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    exercises: list[dict] = field(default_factory=list)
    stopped: str | None = None
    output_tail: str = ""
    cells: list[dict] = field(default_factory=list)   # the notebook's cells that did not run cleanly

    @property
    def passed(self) -> bool:
        return self.status == "clean"

    @property
    def reason(self) -> str | None:
        """The grader's stable reason code for this run's verdict (None when clean)."""
        return {"clean": None, "errors": f"sanitizer-{self.tool}", "timed-out": "timed-out"}.get(self.status,
                                                                                               "crashed")


@dataclass
class NotebookSanitized:
    path: str
    chapter: str | None
    tools: list[ToolRun] = field(default_factory=list)
    skipped_tools: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(t.passed for t in self.tools)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = self.passed
        for raw, t in zip(d["tools"], self.tools):
            raw["passed"], raw["reason"] = t.passed, t.reason
        return d


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def run_tool(tool: str, sanitizer: str, notebook: Path, workdir: Path, env: dict,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> ToolRun:
    """One compute-sanitizer run of one tool over one notebook, parsed."""
    stem = f"{notebook.stem}.{tool}"
    report, log = workdir / f"{stem}.report.json", workdir / f"{stem}.log"
    for p in (report, log):
        p.unlink(missing_ok=True)
    cmd = build_command(tool, sanitizer, notebook, report, log)
    start = time.perf_counter()
    timed_out = False
    proc = subprocess.Popen(cmd, cwd=str(notebook.parent), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the sanitizer and the runner it started: our group
        except ProcessLookupError:
            pass
        output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    text = log.read_text(errors="replace") if log.exists() else ""
    manifest = json.loads(report.read_text()) if report.exists() else {}
    return interpret(tool, text, manifest, proc.returncode, output or "", seconds, timed_out, timeout_s)


def interpret(tool: str, log: str, manifest: dict, exit_code: int | None, output: str, seconds: float,
              timed_out: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S) -> ToolRun:
    """Turn one run's log, report and exit status into a ToolRun."""
    parsed = parse_log(log, tool)
    code = LearnerCode(manifest)
    for f in parsed.findings:
        map_to_learner(f, code)
    findings = group_findings(parsed.findings)
    failing = [f for f in findings if f.failing]
    if not failing:   # no error in a kernel could be read, but a CUDA call says a kernel crashed
        failing = [f for f in findings if f.category == "api" and CRASH.search(f.kind)]
    if parsed.error_summary is not None:
        counted = parsed.error_summary
    elif parsed.hazard_summary is not None:
        counted = sum(parsed.hazard_summary)
    else:
        counted = sum(f.count for f in failing)
    run = ToolRun(tool, "clean", seconds, exit_code, counted, findings, parsed.notes,
                  manifest.get("exercises", []), manifest.get("stopped"), _tail(output),
                  [c for c in manifest.get("cells", []) if c.get("outcome") != "ok"])
    if failing:
        run.status = "errors"
    elif timed_out:
        run.status = "timed-out"
        run.stopped = f"timed out after {timeout_s:.0f} s (an endless loop in a kernel, or a very slow launch)"
    elif not manifest:
        run.status = "sanitizer-failed"
        run.stopped = "the runner never started: " + (_tail(log or output, 4).replace("\n", " / ") or "no output")
    elif not manifest.get("finished"):
        run.status = "crashed"
        run.stopped = "the notebook's process died before it finished: " + (_tail(output, 3).replace("\n", " / ")
                                                                           or "no output")
    elif exit_code == ERROR_EXITCODE and not any(f.category == "api" for f in findings):
        run.status = "errors"   # counted by the sanitizer, in a form this parser did not read: show the log
        run.notes.append("compute-sanitizer reported errors this summary could not read; its log ends:\n"
                         + _tail(log, 20))
    return run


def sanitize_notebook(path: Path, sanitizer: str, workdir: Path, env: dict, tools=None,
                      timeout_s: float = DEFAULT_TIMEOUT_S, echo=None) -> NotebookSanitized:
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return NotebookSanitized(str(path), None, error=f"cannot read the notebook: {exc}")
    chapter = nbcells.chapter_of(nb, path)
    result = NotebookSanitized(str(path), chapter)
    if chapter not in chapters.names() or not hasattr(chapters.module(chapter), "SANITIZE"):
        result.error = (f"not a Kernel Ladder chapter notebook (its setup cell imports no chapter of "
                        f"{', '.join(chapters.names())}): nothing to sanitize")
        return result
    chosen = tools_for(chapter, tools)
    # Tools left out by the chapter's own choice (not by --tool) are named in the summary.
    result.skipped_tools = [t for t in TOOLS if t not in chosen] if not tools else []
    for tool in chosen:
        if echo:
            echo(f"  {tool}: running (small sizes, under compute-sanitizer)...")
        result.tools.append(run_tool(tool, sanitizer, path.resolve(), workdir, env, timeout_s))
    ran = [e for t in result.tools for e in t.exercises if e["outcome"] not in ("not-written", "missing")]
    if result.tools and not ran and all(t.status == "clean" for t in result.tools):
        result.error = ("no exercise of this notebook ran (not written yet, or its cell failed), so nothing "
                        "was checked")
    return result


def sanitize(paths: list[Path], tools=None, timeout_s: float = DEFAULT_TIMEOUT_S, as_json: bool = False,
             echo=print) -> int:
    """`ladder check --sanitize`: exit status 0 when every tool is clean on every notebook."""
    why = unavailable_reason()
    if why:
        from ..cuda.gpu import gpu_or_reason

        reason = "failed" if gpu_or_reason()[0] else "no-gpu"
        if as_json:
            echo(json.dumps({"schema": SCHEMA, "passed": False, "error": why, "reason": reason, "notebooks": []},
                            indent=2))
            return 2
        exc = SanitizerUnavailable(why)
        exc.reason = reason
        raise exc
    sanitizer = find_sanitizer()
    version = sanitizer_version(sanitizer)
    results = []
    with tempfile.TemporaryDirectory(prefix="ladder-sanitize-") as tmp:
        workdir = Path(tmp)
        env = sanitize_env(workdir / "triton-cache")
        for path in paths:
            if not as_json:
                echo(f"{path}  (compute-sanitizer {version})")
            r = sanitize_notebook(Path(path), sanitizer, workdir, env, tools, timeout_s,
                                  echo=None if as_json else echo)
            results.append(r)
            if not as_json:
                echo(format_notebook(r))
    passed = all(r.passed for r in results)
    if as_json:
        echo(json.dumps({"schema": SCHEMA, "passed": passed, "sanitizer": {"path": sanitizer, "version": version},
                         "notebooks": [r.as_dict() for r in results]}, indent=2))
    elif len(results) > 1:
        echo(f"{sum(r.passed for r in results)} of {len(results)} notebooks clean under compute-sanitizer")
    return 0 if passed else 1


# ---------------------------------------------------------------------------------- printing

def _exercise_lines(run: ToolRun) -> list[str]:
    lines = []
    for e in run.exercises:
        if e["outcome"] == "ok" or (e["stretch"] and e["outcome"] in ("not-written", "missing")):
            continue
        what = {"not-written": "not written yet: not checked", "missing": e.get("message") or "missing",
                "no-gpu": "not run: no GPU", "failed": "failed its check under the sanitizer",
                "raised": "raised an error under the sanitizer"}.get(e["outcome"], e["outcome"])
        lines.append(f"    - {e['key']} {e['title']} ({e['launcher']}): {what}")
        if e["outcome"] in ("failed", "raised") and e.get("message"):
            lines += [f"        {l}" for l in e["message"].splitlines()[:3]]
    return lines


def format_finding(f: Finding) -> list[str]:
    head = f"    ✗ {f.kind}"
    extra = [f"kernel `{f.kernel}`"] if f.kernel else []
    if f.count > 1:
        extra.append(f"{f.count:,} {'hazards' if f.category == 'race' else 'reports'}")
    if f.severity == "warning":
        extra.append("a warning")
    if extra:
        head += f" ({', '.join(extra)})"
    lines = [head]
    unique_sites = list({(site["access"], site["line"], site["file"]): site for site in f.sites}.values())
    if f.category == "race" and unique_sites:
        for site in unique_sites[:3]:
            lines.append(f"        {site['access']} at {site['where']}:")
            if site["code"]:
                lines.append(f"            {site['code']}")
    elif f.where:
        lines.append(f"        at {f.where}:")
        if f.code:
            lines.append(f"            {f.code}")
    elif f.locations:
        loc = f.locations[0]
        place = f"{loc.file}:{loc.line}" if loc.file else "no line information"
        lines.append(f"        at {loc.function} ({place})")
    if f.thread or f.block:
        lines.append(f"        thread ({f.thread}) of block ({f.block})" if f.block else f"        thread ({f.thread})")
    lines += [f"        {d}" for d in f.details[:2]]
    if f.exercises:
        lines.append(f"        launched by: {', '.join(f.exercises)}")
    return lines


def format_tool(run: ToolRun) -> list[str]:
    checked = [f"{e['key']} {e['launcher']}" for e in run.exercises if e["outcome"] == "ok"]
    failing = [f for f in run.findings if f.failing] or \
        [f for f in run.findings if f.category == "api" and CRASH.search(f.kind)]
    if run.status == "clean":
        what = f"checked {', '.join(checked)}" if checked else "no exercise ran"
        lines = [f"  {run.tool}: clean ({what}; {run.seconds:.0f} s)"]
    elif run.status == "errors":
        n = max(run.errors, len(failing))
        lines = [f"  {run.tool}: {n:,} error{'s' if n != 1 else ''} reported ({run.seconds:.0f} s)"]
        for f in failing[:SHOWN_PER_TOOL]:
            lines += format_finding(f)
        if len(failing) > SHOWN_PER_TOOL:
            lines.append(f"    ... and {len(failing) - SHOWN_PER_TOOL} more kinds of error (--json lists them all)")
        if not failing:
            lines += [f"    {n}" for n in run.notes[-1:]]
    else:
        lines = [f"  {run.tool}: {run.status.replace('-', ' ')}: {run.stopped}"]
        if run.status != "timed-out" and run.output_tail:
            lines += [f"    | {l}" for l in run.output_tail.splitlines()[-6:]]
    if run.stopped and run.status in ("clean", "errors"):
        lines.append(f"    ({run.stopped})")
    api = [f for f in run.findings if f.category == "api"]
    if api and run.status != "clean":
        lines.append(f"    CUDA calls that failed (often a consequence of the above): {api[0].kind}")
    lines += _exercise_lines(run)
    return lines


def format_notebook(r: NotebookSanitized) -> str:
    lines = []
    if r.error and not r.tools:
        return f"  ! {r.error}"
    for cell in (r.tools[0].cells if r.tools else []):
        if cell["outcome"] == "raised":
            lines.append(f"  ! cell '{cell['grade_id']}' raised {cell['message']}")
    for run in r.tools:
        lines += format_tool(run)
    if r.skipped_tools:
        lines.append(f"  {', '.join(r.skipped_tools)}: not run for this chapter's kernels (Triton places their "
                     "shared memory and barriers itself); ask for them with --tool")
    if r.error:
        lines.append(f"  ! {r.error}")
    lines.append(f"  {'CLEAN' if r.passed else 'PROBLEMS FOUND' if not r.error else 'NOT CHECKED'}")
    return "\n".join(lines)


