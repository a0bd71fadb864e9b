#!/usr/bin/env bash
# Issue 15 (class-scale grading) on a GPU machine, through the device tool's `run` with .whl carried:
#   bash assets/results/issue15_gpu.sh time "$OUT" [CHAPTERS]
#       each solution notebook graded alone by `ladder grade`, timed, with where the time went
#       (assets/results/issue15/grading_time.py)
#   bash assets/results/issue15_gpu.sh class "$OUT" GPUS [HALF] [CHAPTER]     (GPUS: a number, or
#       "scheduler" for one GPU through Dask: a local scheduler and one pinned worker, graded with --scheduler)
#       a synthetic class of 16 students of CHAPTER (default 01_vector_add; assets/results/issue15/
#       synthetic_class.py) graded by `ladder grade` on GPUS GPUs (1: the default path, no Dask; N > 1:
#       --gpus N), timed; the grades, the summary and the journal are kept, and each score is compared
#       with the one its submission promises (expected.json, score_check.txt). HALF 1 or 2 grades every
#       other student, for a one-GPU class that does not fit one device call ("" for the whole class).
#       The time limits are tests/grading's short ones, so that the hanging student costs seconds.
#       With GPUS > 1, carry .whl-dask too (dask, distributed, dask-cuda 26.10 and their pure-Python
#       dependencies: `pip download --only-binary=:all: --python-version 3.12 ... "dask[distributed]"
#       dask-cuda`, less what the image has: numpy, numba, pyyaml, jinja2, tornado from .whl).
set -uo pipefail
part=$1; out=$2; shift 2
source "$(dirname "$0")/gpu_env.sh"
case "$part" in
  time) python3 assets/results/issue15/grading_time.py --out "$out" --chapters "${1:-}" 2>&1 | tee "$out/grading_time.md" ;;
  class)
    gpus=${1:-1}; half=${2:-}; chapter=${3:-01_vector_add}
    python3 assets/results/issue15/synthetic_class.py "$out/subs" --chapter "$chapter" ${half:+--half "$half"} || exit 1
    python3 assets/results/issue15/synthetic_class.py --expected --chapter "$chapter" ${half:+--half "$half"} > "$out/expected.json"
    export LADDER_CELL_TIMEOUT_S=45 LADDER_FIRST_CALL_TIMEOUT_S=20 LADDER_CALL_TIMEOUT_S=20
    extra=()
    if [ "$gpus" = scheduler ]; then
        # one GPU through Dask all the same: a local scheduler and one worker pinned to GPU 0, as an
        # instructor starts them for --scheduler (README), so that both paths grade the same class
        dask scheduler --host 127.0.0.1 --port 8786 --dashboard-address :0 > "$out/scheduler.log" 2>&1 &
        CUDA_VISIBLE_DEVICES=0 dask worker tcp://127.0.0.1:8786 --nthreads 1 --resources GPU=1 \
            --dashboard-address :0 > "$out/worker.log" 2>&1 &
        sleep 10
        extra=(--scheduler tcp://127.0.0.1:8786)
    elif [ "$gpus" -gt 1 ]; then
        extra=(--gpus "$gpus")
    fi
    start=$(date +%s.%N)
    # CLASS_LIMIT_S: stop the grading in time for the records to be written within one device call
    timeout "${CLASS_LIMIT_S:-86400}" python3 -m grader.cli grade "$out/subs" --assignment "$chapter" --workspace "$out/ws" "${extra[@]}" \
        > "$out/grade.txt" 2> "$out/grade.stderr"
    rc=$?
    [ "$gpus" = scheduler ] && { kill $(jobs -p) 2>/dev/null; sleep 2; }
    echo "rc=$rc gpus=$gpus wall_s=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 1))")" | tee "$out/wall.txt"
    grep -v "^    [✓✗]" "$out/grade.txt" | tail -40
    cp "$out/ws/grades.csv" "$out/grades.csv"
    python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute('select student, score, max_score, round(seconds,1), worker, attempts, notes from ladder_graded order by student')]" "$out/ws/gradebook.db" > "$out/journal.txt"
    python3 - "$out/expected.json" "$out/grades.csv" <<'PY' | tee "$out/score_check.txt"
import csv, json, sys
expected = json.load(open(sys.argv[1]))
got = {r["student_id"]: float(r["score"]) for r in csv.DictReader(open(sys.argv[2]))}
for student in sorted(expected):
    mark = "ok" if got.get(student) == expected[student] else "DIFFERS"
    print(f"{mark:8} {student:20} expected {expected[student]:>4}  graded {got.get(student)}")
print("all as expected" if all(got.get(s) == e for s, e in expected.items()) else "some scores differ")
PY
    # why each failed test cell failed: the reason and the first line of its error output in the autograded notebook
    python3 - "$out/ws/autograded" "$chapter" <<'PY' > "$out/failures.txt"
import json, sys
from pathlib import Path
for nb_path in sorted(Path(sys.argv[1]).glob(f"*/{sys.argv[2]}/*.ipynb")):
    for cell in json.loads(nb_path.read_text())["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        errors = [o.get("evalue", "") for o in cell.get("outputs", []) if o["output_type"] == "error"]
        if meta.get("grade") and errors:
            lines = errors[-1].strip().splitlines()
            print(f"{nb_path.parts[-3]:20} {meta['grade_id']:16} {lines[-1]} {lines[0][:240]}")
PY
    # the device tool brings back only a few files: the small ones go into one record
    for f in wall.txt score_check.txt failures.txt journal.txt expected.json gpu.txt; do
        echo "== $f"; cat "$out/$f"
    done > "$out/record.txt" && (cd "$out" && rm -f wall.txt score_check.txt failures.txt journal.txt expected.json gpu.txt)
    rm -rf "$out/ws/source" "$out/ws/release" "$out/subs"
    (cd "$out" && tar czf /tmp/class.tgz ws && rm -rf ws && mv /tmp/class.tgz ws.tgz)
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
