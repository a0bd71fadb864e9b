#!/usr/bin/env bash
# Issue 15 (class-scale grading) on a GPU machine, through the device tool's `run` with .whl carried:
#   bash assets/results/issue15_gpu.sh time "$OUT" [CHAPTERS]
#       each solution notebook graded alone by `ladder grade`, timed, with where the time went
#       (assets/results/issue15/grading_time.py)
set -uo pipefail
part=$1; out=$2; shift 2
source "$(dirname "$0")/gpu_env.sh"
case "$part" in
  time) python3 assets/results/issue15/grading_time.py --out "$out" --chapters "${1:-}" 2>&1 | tee "$out/grading_time.md" ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
