#!/usr/bin/env bash
# Issue 14 (device-side accounting) on a GPU machine: the device tool's `run`, with .whl carried (the
# Jupyter stack as wheels: shared/tools/offline-wheels.sh, plus pytest-xdist and execnet).
#   bash assets/results/issue14_gpu.sh exploits "$OUT"
#       the exploit suite's library-compute entries and sync_print_1b on both paths, 4 at a time
#       (EXPLOITS_K=EXPRESSION picks others: pytest -k)
#   bash assets/results/issue14_gpu.sh effect "$OUT" CHAPTERS RUNS
#       every graded speed cell's passing rung, RUNS times traced and RUNS times untraced, interleaved
#       (assets/results/issue14/trace_effect.py); CHAPTERS like 1,2,3
#   bash assets/results/issue14_gpu.sh correct "$OUT"
#       correct entries of the exploit suite on both paths, one at a time (EXPLOITS_K narrows)
set -uo pipefail
part=$1; out=$2; shift 2
source "$(dirname "$0")/gpu_env.sh"
NEW="cupy_matmul_ch03 or cupy_matmul_ch05 or ctypes_cublas or torch_compile_1b or library_triton or side_stream_library or sync_print_1b"
case "$part" in
  exploits) python3 -m pytest -q -p no:cacheprovider -n 4 -rA --durations=0 tests/notebooks/test_exploits.py \
              -m gpu -k "rejected and (${EXPLOITS_K:-$NEW})" 2>&1 | tee "$out/exploits.txt" ;;
  effect) python3 assets/results/issue14/trace_effect.py --chapters "$1" --runs "$2" \
            --out "$out/trace_effect_ch$(echo "$1" | tr -d ,).json" 2>&1 | tee "$out/trace_effect_ch$(echo "$1" | tr -d ,).md" ;;
  correct) python3 -m pytest -q -p no:cacheprovider -rA --durations=0 tests/notebooks/test_exploits.py \
             -m gpu -k "accepted and (${EXPLOITS_K:-minimal})" 2>&1 | tee "$out/exploits_correct.txt" ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
