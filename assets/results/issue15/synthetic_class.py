"""A synthetic class for grading at scale: every chapter-1 synthetic student of tests/submissions/ch01,
in several copies, as STUDENT.ipynb files.

    python3 assets/results/issue15/synthetic_class.py OUT_FOLDER [--half 1|2]

--half keeps every other student (by name): the class in two halves, for a one-GPU grading that does not
fit one device call (the two halves' times add up to the class's).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from submissions.build import build  # noqa: E402

# 16 students: correct, wrong, crashing, hanging, cheating and tampering, several of them twice or more
CLASS = {"correct": 4, "wrong": 2, "stub": 1, "compile_error": 2, "killer": 1, "crasher": 2, "hanger": 1,
         "cheater": 2, "tampered": 1}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--half", type=int, choices=(1, 2))
    args = ap.parse_args()
    out = Path(args.out)
    students = sorted((f"{name}-{i + 1}", name) for name, copies in CLASS.items() for i in range(copies))
    if args.half:
        students = students[args.half - 1::2]
    for student, name in students:
        build("ch01", "01_vector_add", name, out / f"{student}.ipynb")
    print(f"{len(students)} students in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
