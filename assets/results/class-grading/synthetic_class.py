"""A synthetic class for grading at scale: 16 students of one chapter (correct, wrong, crashing, hanging,
cheating and tampering, several of them more than once), as STUDENT.ipynb files.

    python3 assets/results/class-grading/synthetic_class.py OUT_FOLDER [--chapter 01_vector_add] [--half 1|2]
    python3 assets/results/class-grading/synthetic_class.py --expected --chapter 05_triton_matmul

--half keeps every other student (by name): the class in two halves, for a one-GPU grading that does not
fit one command of at most 600 s (the two halves' times add up to the class's). --expected prints each student's score
on a GPU, as the submission's docstring promises it, as JSON.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from submissions.build import build  # noqa: E402

# chapter -> {kind of student: (tests/submissions package, module, copies, score out of 15 on a GPU)}.
# Chapter 1's kinds are tests/notebooks/test_grading.py's class; chapter 5's mix its own students with
# chapter-5 entries of the exploit suite (tests/submissions/wrong), whose failures each take one
# exercise's cells: a crash or a cheat in 5a's launcher fails 5a's three cells (6 points), a hang in 5a's
# hidden shapes that one cell (2), and its launcher, one 128x128x32 configuration without the autotuner, misses
# 5a's speed bar too (measured on an H200: 11). A replaced timer costs every check that runs in a separate process
# (the verifier refuses the tampered process before any check), so only 5.0 and 5.1 score (2).
CLASSES = {
    "01_vector_add": {
        "correct": ("ch01", "correct", 4, 15), "wrong": ("ch01", "wrong", 2, 2), "stub": ("ch01", "stub", 1, 0),
        "compile_error": ("ch01", "compile_error", 2, 9), "killer": ("ch01", "killer", 1, 14),
        "crasher": ("ch01", "crasher", 2, 9), "hanger": ("ch01", "hanger", 1, 9),
        "cheater": ("ch01", "cheater", 2, 9), "tampered": ("ch01", "tampered", 1, 13),
    },
    "05_triton_matmul": {
        "correct": ("ch05", "correct", 4, 15), "wrong": ("ch05", "wrong", 1, 3), "stub": ("ch05", "stub", 1, 0),
        "naive": ("ch05", "naive_5a", 1, 13), "unfused": ("ch05", "unfused_5b", 1, 13),
        "killer": ("ch05", "killer", 1, 14), "crasher": ("wrong", "crash_null_read", 2, 9),
        "hanger": ("wrong", "infinite_loop_python", 1, 11), "cheater": ("wrong", "cupy_matmul_ch05", 2, 9),
        "timer_tamperer": ("wrong", "tamper_do_bench", 1, 2), "tampered": ("ch05", "tampered", 1, 13),
    },
}


def students(chapter: str, half: int | None = None) -> list[tuple[str, str, str, int]]:
    """(student, package, module, expected GPU score) for each student of the chapter's class, by name."""
    rows = sorted((f"{kind}-{i + 1}", package, module, score)
                  for kind, (package, module, copies, score) in CLASSES[chapter].items() for i in range(copies))
    return rows[half - 1::2] if half else rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--chapter", default="01_vector_add", choices=sorted(CLASSES))
    ap.add_argument("--half", type=int, choices=(1, 2))
    ap.add_argument("--expected", action="store_true", help="print the expected GPU scores as JSON and stop")
    args = ap.parse_args()
    chosen = students(args.chapter, args.half)
    if args.expected:
        print(json.dumps({student: score for student, _, _, score in chosen}, indent=1))
        return 0
    if not args.out:
        ap.error("OUT_FOLDER is needed to build the class")
    out = Path(args.out)
    for student, package, module, _ in chosen:
        build(package, args.chapter, module, out / f"{student}.ipynb")
    print(f"{len(chosen)} students of {args.chapter} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
