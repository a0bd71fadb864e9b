#!/usr/bin/env bash
# Issue 13 (one grading path) on a GPU machine: the device tool's `run`, with .whl carried (the
# Jupyter stack as wheels: shared/tools/offline-wheels.sh, plus pytest-xdist and execnet).
#   bash assets/results/issue13_gpu.sh verdicts "$OUT" [CHAPTER:STUDENT,... ...]
#       every chapter's solution and failing rungs through `ladder check` and `ladder grade`, cell by cell
#       (assets/results/one_verdict.py); a smoke check of one isolated cell first, so that a broken
#       setup costs seconds
#   bash assets/results/issue13_gpu.sh "wrong correct killer" "$OUT"
#       wrong: the exploit suite's wrong GPU entries on both paths, 4 at a time (their reasons do not
#              depend on timing: a slower run still fails below-bar, the others are facts);
#       correct: its correct GPU entries on both paths, one at a time (their speed cells must pass);
#       killer: the killer student graded by `ladder grade` and by `ladder check`
#   EXPLOITS_K=EXPRESSION narrows the wrong or correct entries (pytest -k)
set -uo pipefail
part=$1; out=$2; shift 2
source "$(dirname "$0")/gpu_env.sh"
rc=0
case "$part" in
  verdicts)
    python3 - <<'EOF' 2>&1 | tee "$out/smoke.txt" || exit 1
import sys, time
from grader.isolation import isolate
from grader.learner import cells
nb = "solutions/01_vector_add/01_vector_add.ipynb"
for gid in ("vector-add-visible", "vector-add-visible"):
    t = time.perf_counter()
    v = isolate.check_sources(cells.learner_cells(nb, gid), cells.test_source(nb, gid), gid)
    print(gid, v.passed, v.reason, f"{time.perf_counter() - t:.2f} s", v.message[:500])
    if not v.passed:
        sys.exit(1)
EOF
    python3 assets/results/one_verdict.py --out "$out" "$@" 2>&1 | tee "$out/one_verdict.md" || rc=1
    ;;
  *)
    for p in $part; do
      case "$p" in
        wrong) python3 -m pytest -q -p no:cacheprovider -n 4 -rA --durations=0 tests/notebooks/test_exploits.py \
                 -m gpu -k "${EXPLOITS_K:-rejected}" 2>&1 | tee "$out/exploits_wrong.txt" || rc=1 ;;
        correct) python3 -m pytest -q -p no:cacheprovider -rA --durations=0 tests/notebooks/test_exploits.py \
                   -m gpu -k "${EXPLOITS_K:-accepted}" 2>&1 | tee "$out/exploits_correct.txt" || rc=1 ;;
        killer) LADDER_CLASS=killer,correct python3 -m pytest -q -p no:cacheprovider -rA --durations=0 \
                  tests/notebooks/test_grading.py tests/notebooks/test_kernel_death.py \
                  -k "exactly_the_points or grade_keeps or check_fails" 2>&1 | tee "$out/killer.txt" || rc=1 ;;
        *) echo "unknown part $p"; exit 2 ;;
      esac
    done
    ;;
esac
exit $rc
