#!/usr/bin/env bash
# Trusted timing on a GPU: the exploit suite's timing and integrity entries on both paths, the sanitizer's
# entries. (The bars under trusted timing: `ladder calibrate`, whose record keeps every run's ratio by the
# trusted time and by the events.) Wheels for the Jupyter stack in .whl/ (carried with the device
# tool's `run`; shared/tools/offline-wheels.sh).
#   bash assets/results/timing-integrity/run.sh exploits OUT        new exploit entries, both paths; sanitizer
set -uo pipefail
# (`part`, not `step`: the sourced set-up sets `step` in this shell)
part=$1; out=$2; shift 2
source assets/results/gpu_session.sh env "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv | tee "$out/nvidia-smi.txt"
rc=0
case "$part" in
  exploits)
    names="clock_rescaled_in_launcher or clock_replaced_whole or clock_patch_self_restoring or recorder_code_swapped"
    names="$names or forged_reply or pointer_cache or batch_and_skip or detect_timing or inflated_empty_request"
    names="$names or fingerprint_fake_launch or block_too_large or upcast_output or raises_on_odd_shapes"
    names="$names or mutated_inputs or launch_after_return or compile_error_wmma or fingerprint_cache"
    names="$names or tamper_event_timer or ch05_5a_minimal"
    names="${NAMES:-$names}"
    timeout "${EXPLOITS_S:-420}" python3 -m pytest -p no:cacheprovider -q -rA tests/notebooks/test_exploits.py -k "$names" \
      2>&1 | tee "$out/exploits.txt" || rc=1
    [ -n "${NAMES:-}" ] || timeout "${SANITIZE_S:-150}" python3 -m pytest -p no:cacheprovider -q -rA tests/sanitizer/test_sanitize.py \
      -k "every_sanitizer_entry" 2>&1 | tee "$out/sanitizer.txt" || rc=1
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
exit $rc
