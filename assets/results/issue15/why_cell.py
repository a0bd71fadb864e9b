"""Why does a solution notebook's graded cell fail under `ladder grade`? Each named cell checked in fresh
processes (grader.isolation.isolate.check_cell, the grading path), its verdict and output printed.

    python3 assets/results/issue15/why_cell.py NOTEBOOK GRADE_ID [GRADE_ID ...]
"""
import sys
import time

from grader.isolation.isolate import check_cell

notebook, cells = sys.argv[1], sys.argv[2:]
for cell in cells:
    start = time.perf_counter()
    verdict = check_cell(notebook, cell)
    print(f"== {notebook} {cell}: passed={verdict.passed} reason={verdict.reason} ({time.perf_counter() - start:.1f} s)")
    print(verdict.message[:4000])
    print("-- printed:")
    print(verdict.stdout[-3000:])
