"""File the measurement records by subject, and rewrite every reference to their old paths.

    python assets/results/refile.py            # move what is still at an old path, rewrite references
    python assets/results/refile.py --check    # exit 1 and list what is left to do (tests/test_layout.py)

Re-runnable: a path already moved is skipped, a folder whose new home exists is merged into it file by
file (git mv), and a reference already rewritten no longer matches. Run it again after merging work that
still cites the old paths. References are rewritten in every tracked text file: code, docs, notebooks,
bars.toml, tests and the records themselves; course/ is not edited but released again from solutions/
(`ladder release`, which keeps nbgrader's cell checksums right) when a solution notebook changed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "assets/results"

# old path under assets/results -> new path under assets/results, by subject
MOVES = {
    # calibration of each chapter's pass bars
    "ch01-h100": "calibration/ch01-h100",
    "ch02-h200": "calibration/ch02-h200",
    "ch03-h200": "calibration/ch03-h200",
    "ch04-h200": "calibration/ch04-h200",
    "ch05-h200": "calibration/ch05-h200",
    "ch05-5b-sm90": "calibration/ch05-5b-sm90",
    "ch05-smallsmem-h100": "calibration/ch05-smallsmem-h100",
    "ch06-h200": "calibration/ch06-h200",
    "ch07-h100": "calibration/ch07-h100",
    "ch08-h100": "calibration/ch08-h100",
    "issue19": "calibration/top-rungs",
    # grading time and class scaling
    "issue15": "class-grading",
    "class-grading/ch07-08-after-session-fix-h100": "class-grading/ch07-08-h100",
    # the exploit suite on GPUs, and one verdict on both grading paths
    "issue13-h100": "exploits/one-verdict-h100",
    "issue13-h200": "exploits/one-verdict-h200",
    "issue5-h100": "timing-integrity/isolated-grading-h100",
    "gpu-tests-h100": "exploits/gpu-suite-h100",
    "one_verdict.py": "exploits/one_verdict.py",
    # tracing and timing integrity
    "issue14": "timing-integrity/device-accounting",
    "isolation-h100": "timing-integrity/isolation-h100",
    "isolation-h200": "timing-integrity/isolation-h200",
    "stability.py": "timing-integrity/stability.py",
    # profiles
    "issue16": "profiles",
    # nbval and notebooks
    "ch02-06-h200": "notebooks/ch02-06-h200",
    "run_notebook.py": "notebooks/run_notebook.py",
    # consumer GPUs and other architectures
    "issue18": "consumer-gpus/architectures",
    # the GPU session scripts, folded into gpu_session.sh's subcommands
    "issue13_gpu.sh": "gpu_session.sh",
    "issue14_gpu.sh": "gpu_session.sh",
    "issue15_gpu.sh": "gpu_session.sh",
    "issue16_gpu.sh": "gpu_session.sh",
    "issue17_ch07_gpu.sh": "gpu_session.sh",
    "issue17_ch08_gpu.sh": "gpu_session.sh",
    "issue19_gpu.sh": "gpu_session.sh",
    "gpu_env.sh": "gpu_session.sh",
    # one-off calibration scripts, replaced by `ladder calibrate` (grader/rungs.toml)
    "calibrate_ch01.py": "calibration/ch01-h100",
    "calibrate_ch02.py": "calibration/ch02-h200",
    "calibrate_ch03.py": "calibration/ch03-h200",
    "calibrate_ch04.py": "calibration/ch04-h200",
    "calibrate_ch05.py": "calibration/ch05-h200",
    "calibrate_ch05_smallsmem.py": "calibration/ch05-smallsmem-h100",
    "calibrate_ch06.py": "calibration/ch06-h200",
    "calibrate_ch07.py": "calibration/ch07-h100",
    "calibrate_ch08.py": "calibration/ch08-h100",
    # one-off investigations: what they found is in their records' READMEs
    "ch07": "calibration/ch07-h100",
    "count_causal.py": "timing-integrity/isolated-grading-h100",
    "issue5_gpu.sh": "timing-integrity/isolated-grading-h100",
}

# Old paths that go (scripts nothing runs any more); references to them point at the record they made
# (MOVES gives the record). Paths inside a moved folder are given by their new place.
DELETE = [
    "calibrate.py", "calibrate_ch01.py", "calibrate_ch02.py", "calibrate_ch03.py", "calibrate_ch04.py",
    "calibrate_ch05.py", "calibrate_ch05_smallsmem.py", "calibrate_ch06.py", "calibrate_ch07.py",
    "calibrate_ch08.py", "ch07", "count_causal.py", "issue5_gpu.sh", "issue13_gpu.sh", "issue14_gpu.sh",
    "issue15_gpu.sh", "issue16_gpu.sh", "issue17_ch07_gpu.sh", "issue17_ch08_gpu.sh", "issue19_gpu.sh",
    "gpu_env.sh",
    "timing-integrity/device-accounting/superseded",   # failed runs of a retired script: tracebacks only
    "timing-integrity/device-accounting/trace_effect.py", "timing-integrity/device-accounting/show_verdicts.py",
    "class-grading/preload_probe.py", "class-grading/profile_check.py", "class-grading/who_imports.py",
    "class-grading/why_cell.py", "class-grading/ahead_order.sh", "profiles/probe.sh",
    "calibration/top-rungs/hopper_gap.py", "calibration/top-rungs/sweep_gpu.py",
    "calibration/top-rungs/sweep_kernels.py", "calibration/top-rungs/stretch_fast_cell.py",
    "calibration/top-rungs/why_6b_speed.py",
]

# Exact rewrites a path pattern cannot make, file by file (calibration folders named relative to RESULTS).
LITERAL = {
    "tests/notebooks/test_text_facts.py": [
        ('RESULTS = ROOT / "assets" / "results"\n', 'RESULTS = ROOT / "assets" / "results" / "calibration"\n')],
}

# The old scripts' command lines, as gpu_session.sh's subcommands (after the path rewrite above).
SESSION = "assets/results/gpu_session.sh"
COMMANDS = [
    (re.compile(r"source " + re.escape(SESSION) + r"(?! env)"), f'source {SESSION} env "$OUT"'),
    (re.compile(re.escape(SESSION) + r" verdicts\b"), f"{SESSION} one-verdict"),
    (re.compile(re.escape(SESSION) + r" time\b"), f"{SESSION} grading-time"),
    (re.compile(re.escape(SESSION) + r' "((?:wrong|correct|killer)(?: (?:wrong|correct|killer))*)" ([^\s`]+)'),
     SESSION + r' exploits \2 "\1"'),
    (re.compile(re.escape(SESSION) + r" (wrong|correct|killer) ([^\s`]+)"), SESSION + r" exploits \2 \1"),
]

TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".ipynb", ".json", ".jsonl", ".txt", ".yml", ".yaml", ".cfg", ".log"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def tracked(path: str) -> list[str]:
    return [p for p in git("ls-files", "--", path).splitlines() if p]


def pending_moves() -> list[tuple[str, str]]:
    """(old, new) file pairs still to move: every tracked file under an old path that is not deleted."""
    out = []
    for old, new in MOVES.items():
        if old in DELETE or new == "gpu_session.sh":
            continue
        for path in tracked(f"{RESULTS}/{old}"):
            rest = path[len(f"{RESULTS}/{old}"):]
            out.append((path, f"{RESULTS}/{new}{rest}"))
    return out


def pending_deletes() -> list[str]:
    return [p for d in DELETE for p in tracked(f"{RESULTS}/{d}")]


def _reference(old: str) -> re.Pattern:
    # The old path as a whole name: not a prefix of a longer one (ch07 is not ch07-h100).
    return re.compile(r"(?<![\w.-])" + re.escape(f"{RESULTS}/{old}") + r"(?![\w-])")


REFERENCES = sorted(((_reference(old), f"{RESULTS}/{new}") for old, new in MOVES.items()),
                    key=lambda pair: -len(pair[0].pattern))


# The same paths built with pathlib's `/` in code: ROOT / "assets" / "results" / "issue15" / ...
JOINED = [(re.compile(r'"results" / "' + re.escape(old) + r'"'), '"results" / "' + '" / "'.join(new.split("/")) + '"')
          for old, new in MOVES.items()]


def rewrite(text: str, path: str = "") -> str:
    for pattern, new in REFERENCES + JOINED:
        text = pattern.sub(new, text)
    for old, new in LITERAL.get(path, []):
        text = text.replace(old, new)
    for pattern, new in COMMANDS:
        text = pattern.sub(new, text)
    return text


def text_files() -> list[Path]:
    return [ROOT / p for p in git("ls-files").splitlines()
            if Path(p).suffix in TEXT_SUFFIXES and p != f"{RESULTS}/refile.py" and not p.startswith("course/")
            and (ROOT / p).is_file()]


def stale_references() -> list[str]:
    out = []
    for path in text_files():
        text = path.read_text(errors="replace")
        if rewrite(text, str(path.relative_to(ROOT))) != text:
            out.append(str(path.relative_to(ROOT)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="list what is left to do and exit 1 if anything is")
    args = p.parse_args(argv)
    if args.check:
        left = ([f"move {a} -> {b}" for a, b in pending_moves()] + [f"delete {d}" for d in pending_deletes()]
                + [f"rewrite references in {f}" for f in stale_references()])
        print("\n".join(left) or "every record is filed by subject")
        return 1 if left else 0
    while moves := pending_moves():   # again: a folder moved may hold one renamed in its new home
        for old, new in moves:
            (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
            git("mv", old, new)
    for path in pending_deletes():   # after the moves: some are named by their new place
        git("rm", "-q", "-f", path)
    for folder in sorted((ROOT / RESULTS).rglob("*"), reverse=True):   # git leaves the emptied folders
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    released = False
    for path in text_files():
        text = path.read_text(errors="replace")
        new = rewrite(text, str(path.relative_to(ROOT)))
        if new != text:
            path.write_text(new)
            print(f"rewrote references in {path.relative_to(ROOT)}")
            released |= path.suffix == ".ipynb"
    if released:
        return subprocess.run([sys.executable, "-m", "grader.cli", "release"], cwd=ROOT).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
