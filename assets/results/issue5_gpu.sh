#!/usr/bin/env bash
# The GPU runs of issue 5's last session, one part per device call (each must finish inside 10 min):
#   bash assets/results/issue5_gpu.sh PART OUT
# A: counted tensor-core work (tests/test_tccount.py), chapter 4's exploit entries and isolated
#    check, then the chapter 6 correct entries through the isolated path.
# B: stability, 10 isolated gradings each, round-robin: 1b, 5b, 6-causal, and 6-causal of the
#    plainest skipping kernel (tests/submissions/correct/ch06_mask_every_tile.py).
# C: after the 6-causal fix (the causal=False baseline batched in the worker; B's 6-causal figures
#    were inflated by a round trip per baseline call), 6-causal graded 10 times each, round-robin:
#    the solution, the plainest skipping kernel, and ch06/no_skip (masks, never skips: must fail).
# D: stability of 6 (10 gradings); chapter 5's correct entries through the isolated path.
# E: what D had no time for (the last two chapter 5 entries), the chapter 6 entries A had no time
#    for, and the class's killer and cheater students, graded with `ladder grade`.
# F and G (short calls, run by hand):
#   LADDER_CLASS=cheater bash assets/results/gpu_session.sh pytest OUT/F/class tests/test_class.py
#   bash assets/results/gpu_session.sh pytest OUT/G/exploits-ch06 tests/test_exploits.py -k ch06_minimal
#   (G re-ran ch06_minimal after the 6-causal fix; A had run it before.)
# H and I are from the next session (after the Triton work count for 6-causal, `not-skipped`):
# H: counted tensor-core work again (chapter 4 after its refactor; chapter 6's Triton kernels), the
#    exploit entries it concerns (dead_branch_mma, slowed_noncausal, ch04_minimal), no_skip, every
#    chapter 6 correct entry through the isolated path, and a 10th grading of 1b and 5b.
#    (H found ch06_mask_every_tile rejected: with 8 warps its MMAs repeat, 150% of the product.)
# J: counts of every chapter 6 kernel, causal and not (assets/results/count_causal.py), and an
#    extra grading of 5b (H's time limit cut its 10th).
# K: after the rule for repeated MMAs: slowed_noncausal and every chapter 6 correct entry, isolated.
# Every step has its own time limit, so a slow step still leaves the others' results in OUT.
set -uo pipefail
part=$1; out=$2
mkdir -p "$out"
S=assets/results/gpu_session.sh
export PYTEST_ADDOPTS="-v --durations=0 -p no:cacheprovider"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/nvidia-smi.txt"
case "$part" in
  A)
    timeout 120 bash $S pytest "$out/tccount" tests/test_tccount.py -m gpu
    timeout 200 bash $S pytest "$out/exploits-ch04" tests/test_exploits.py -m gpu \
      -k "dead_branch_mma or fake_wmma or sgemm_tf32_wmma or (accepted and ch04)"
    timeout 90 bash $S check "$out/check-ch04" solutions/04_tensor_cores/04_tensor_cores.ipynb
    timeout 160 bash $S pytest "$out/exploits-ch06" tests/test_exploits.py -k "accepted and ch06"
    ;;
  B)
    PYTHONPATH=tests:. python3 -c "from pathlib import Path; from submissions.build import build
build('correct', '06_flash_attention', 'ch06_mask_every_tile', Path('/tmp/mask_every_tile/06_flash_attention.ipynb'))"
    RUNS=10 timeout 570 bash $S stability "$out/stability" \
      solutions/01_vector_add/01_vector_add.ipynb:fused-speed \
      solutions/05_triton_matmul/05_triton_matmul.ipynb:fused-speed \
      solutions/06_flash_attention/06_flash_attention.ipynb:causal-speed \
      /tmp/mask_every_tile/06_flash_attention.ipynb:causal-speed
    ;;
  C)
    PYTHONPATH=tests:. python3 -c "from pathlib import Path; from submissions.build import build
build('correct', '06_flash_attention', 'ch06_mask_every_tile', Path('/tmp/mask_every_tile/06_flash_attention.ipynb'))
build('ch06', '06_flash_attention', 'no_skip', Path('/tmp/no_skip/06_flash_attention.ipynb'))"
    RUNS=10 timeout 575 bash $S stability "$out/stability" \
      solutions/06_flash_attention/06_flash_attention.ipynb:causal-speed \
      /tmp/mask_every_tile/06_flash_attention.ipynb:causal-speed \
      /tmp/no_skip/06_flash_attention.ipynb:causal-speed
    ;;
  D)
    RUNS=10 timeout 175 bash $S stability "$out/stability" \
      solutions/06_flash_attention/06_flash_attention.ipynb:attention-speed
    timeout 390 bash $S pytest "$out/exploits-ch05" tests/test_exploits.py -k "accepted and ch05"
    ;;
  E)
    timeout 170 bash $S pytest "$out/exploits-ch05" tests/test_exploits.py -k "ch05_5b_minimal or ch05_5b_swizzle2d"
    timeout 150 bash $S pytest "$out/exploits-ch06" tests/test_exploits.py -k "ch06_paired_blocks or ch06_reverse_order"
    LADDER_CLASS=killer,cheater timeout 190 bash $S pytest "$out/class" tests/test_class.py
    ;;
  H)
    timeout 120 bash $S pytest "$out/tccount" tests/test_tccount.py -m gpu
    timeout 130 bash $S pytest "$out/exploits" tests/test_exploits.py -m gpu \
      -k "dead_branch_mma or slowed_noncausal or ch04_minimal"
    timeout 70 bash $S pytest "$out/no_skip" tests/test_ch06.py -m gpu -k without_skipping
    timeout 215 bash $S pytest "$out/exploits-ch06" tests/test_exploits.py -k "accepted and ch06"
    RUNS=1 timeout 80 bash $S stability "$out/stability" \
      solutions/01_vector_add/01_vector_add.ipynb:fused-speed \
      solutions/05_triton_matmul/05_triton_matmul.ipynb:fused-speed
    ;;
  J)
    PYTHONPATH=tests:. timeout 150 python3 assets/results/count_causal.py --out "$out/count_causal.json" \
      2>&1 | tee "$out/count_causal.md"
    RUNS=1 timeout 100 bash $S stability "$out/stability" solutions/05_triton_matmul/05_triton_matmul.ipynb:fused-speed
    ;;
  K)
    timeout 330 bash $S pytest "$out/exploits-ch06" tests/test_exploits.py -k "slowed_noncausal or (accepted and ch06)"
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
