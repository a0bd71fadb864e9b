"""Per-chapter grading time of each solution notebook through `ladder grade`, and where it goes.

    python3 assets/results/class-grading/grading_time.py --out DIR [--chapters 01_vector_add,05_triton_matmul]
        [--copies N] [-- EXTRA LADDER GRADE ARGS]

Each chapter's solution notebook is graded as the only student of a fresh workspace, as an instructor
would grade it (isolated checks, the default). The wall time of the whole `ladder grade` command is
the figure against the 60 s goal; the autograded notebook says where it went (grader.classgrade.timing):
the cells run in the notebook's kernel, and the isolated checks with, of them, the worker's start, and
how long the notebook waited for them (checks that ran ahead of the notebook, grader.isolation.ahead,
overlap it). LADDER_CHECKS_AT_ONCE in the environment sets how many checks run ahead at once (1: none).
With `--copies N` the solution is submitted by N students (solution, solution2, ...) in one `ladder
grade`, as in a class: what one student costs once the run's own start (the workspace, the scratch
course, the fork server, the GPU's ceilings) is paid is the journal's per-student seconds, and the wall
time over N. Writes DIR/grading_time.json and prints a Markdown table.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from grader.classgrade.timing import breakdown


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and list(p.glob("*.ipynb")))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--chapters", default="")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = [c for c in args.chapters.split(",") if c] or chapters()
    rows = {}
    for ch in wanted:
        nb = next((ROOT / "solutions" / ch).glob("*.ipynb"))
        with tempfile.TemporaryDirectory(prefix=f"time-{ch}-") as tmp:
            subs = Path(tmp) / "subs"
            subs.mkdir()
            for copy in range(args.copies):   # solution.ipynb, solution2.ipynb, ...: one student each
                shutil.copy(nb, subs / f"solution{copy + 1 if copy else ''}.ipynb")
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(subs), "--assignment", ch,
                                   "--workspace", str(Path(tmp) / "ws"), *args.extra],
                                  capture_output=True, text=True, cwd=ROOT, check=False)
            wall = time.perf_counter() - start
            graded = Path(tmp) / "ws" / "autograded" / "solution" / ch / nb.name
            parts = breakdown(json.loads(graded.read_text())) if graded.is_file() else None
            score = next((line.split()[1] for line in proc.stdout.splitlines() if line.startswith("solution ")), "?")
            per_student = [line for line in proc.stdout.splitlines() if "per student" in line]
            rows[ch] = {"wall_seconds": round(wall, 1), "score": score, "rc": proc.returncode, "copies": args.copies,
                        "per_student": per_student[-1] if per_student else None,
                        **(parts.as_dict() if parts else {}),
                        "checks_from_ahead": [c.name for c in parts.cells if c.ahead] if parts else [],
                        "top": [(c.name, round(c.seconds, 1), round(c.load_seconds, 1),
                                 None if c.wait_seconds is None else round(c.wait_seconds, 1), c.ahead)
                                for c in parts.top(8)]
                        if parts else [], "stdout_tail": proc.stdout[-1500:], "stderr_tail": proc.stderr[-1500:]}
            print(f"{ch}: {wall:.1f} s for {args.copies} student(s), {score}; {per_student[-1] if per_student else ''}",
                  flush=True)
            (out / "grading_time.json").write_text(json.dumps(rows, indent=1))   # each chapter as it ends
    print("\n| chapter | score | ladder grade, s | in the notebook's kernel, s | isolated checks, s | of them worker "
          "start, s | the notebook waited for checks, s | verdicts from ahead |")
    print("|---|---|---|---|---|---|---|---|")
    for ch, r in rows.items():
        used = len(r.get("checks_from_ahead", []))
        print(f"| {ch} | {r['score']} | {r['wall_seconds']} | {r.get('kernel_seconds', '?')} | "
              f"{r.get('check_seconds', '?')} | {r.get('check_load_seconds', '?')} | {r.get('check_wait_seconds', '?')} | "
              f"{used} |")
    for ch, r in rows.items():
        print(f"\n{ch}, the slowest cells (name, s, of which worker start, waited, from ahead):")
        for name, s, load, wait, ahead in r["top"]:
            print(f"  {s:7.1f}  {load:6.1f}  {wait if wait is not None else '-':>6}  {'ahead' if ahead else '     '}  {name}")

    return 0


if __name__ == "__main__":
    sys.exit(main())
