#!/usr/bin/env bash
# The independent correct submissions of 6b, 7a, 7b and 8b on a GPU: each must pass every graded cell,
# speed included, on both paths (the exploit suite), and their speedups are timed against the
# instructor's solutions (tests/submissions/correct/_measure.py --reference), 3 runs a speed cell.
#   bash assets/results/correct_6b_7_8b_gpu.sh OUTDIR      (OUTDIR: $OUT on the device machine)
# Uses assets/results/gpu_session.sh's set-up (offline wheels in .whl/) when torch is there but Jupyter is not.
set -uo pipefail
out=${1:?give the folder to write into}
mkdir -p "$out"
ENTRIES="ch06_6b_delta_in_place or ch07_7a_row_in_registers or ch07_7b_row_pairs or ch08_8b_split_projections"
rc=0
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/nvidia-smi.txt"
bash assets/results/gpu_session.sh pytest "$out" tests/notebooks/test_exploits.py -k "$ENTRIES" || rc=1
PYTHONPATH=/tmp/site:$PWD:$PWD/tests python3 tests/submissions/correct/_measure.py --reference --runs 3 \
    --only ch06_6b_delta_in_place,ch07_7a_row_in_registers,ch07_7b_row_pairs,ch08_8b_split_projections \
    --out "$out/correct_6b_7_8b.json" 2>&1 | tee "$out/correct_6b_7_8b.md" || rc=1
exit $rc
