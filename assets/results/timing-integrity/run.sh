#!/usr/bin/env bash
# Trusted timing on a GPU: the exploit suite's entries on both paths, one pytest a entry, and the sanitizer's
# entries. (The bars under trusted timing: `ladder calibrate`, whose record keeps every run's ratio by the
# trusted time and by the events.) Wheels for the Jupyter stack in .whl/ (from
# shared/tools/offline-wheels.sh).
#   bash assets/results/timing-integrity/run.sh exploits OUT [ENTRY...]
#       each entry (default: every wrong and correct entry of tests/notebooks/test_exploits.py that needs a GPU,
#       in pytest's order; FROM=NAME starts at that entry) until EXPLOITS_S seconds (default 520) are spent,
#       each in its own pytest, so that a call cut short keeps every finished entry's verdict and message:
#       OUT/ENTRY.txt, and one line a entry in OUT/exploits.txt; then, with no entries named, the sanitizer's
#       entries (SANITIZE_S, default 100). SHARD=K/N keeps every Nth entry from the Kth (0-based), for N GPUs side
#       by side (gpu_measure.sh lanes); only shard 0 runs the sanitizer's entries. QUEUE=FILE instead takes one
#       node id at a time from the top of FILE, shared with the other lanes (a line SANITIZER: the sanitizer's
#       entries), until FILE is empty or the time is spent; what is left stays in FILE
set -uo pipefail
# (`part`, not `step`: the sourced set-up sets `step` in this shell)
part=$1; out=$2; shift 2
source assets/results/gpu_measure.sh env "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv | tee "$out/nvidia-smi.txt"
rc=0
case "$part" in
  exploits)
    # One entry in its own pytest (node id, seconds left), its verdict in OUT/NAME.txt and a line in exploits.txt
    entry() {
      local name=${1##*[}; name=${name%]}
      timeout "$2" python3 -m pytest -p no:cacheprovider -q -rA --tb=short "$1" > "$out/$name.txt" 2>&1
      local code=$?; [ $code -eq 0 ] || rc=1
      echo "$name rc=$code $(tail -1 "$out/$name.txt")" | tee -a "$out/exploits.txt"
      grep -E "^E   (AssertionError|  )" "$out/$name.txt" | head -3
    }
    # The sanitizer's entries (seconds left), into OUT/sanitizer.txt
    sanitizer() {
      timeout "$1" python3 -m pytest -p no:cacheprovider -q -rA tests/sanitizer/test_sanitize.py \
        -k "every_sanitizer_entry" > "$out/sanitizer.txt" 2>&1
    }
    end=$(( $(date +%s) + ${EXPLOITS_S:-520} ))
    if [ -n "${QUEUE:-}" ]; then
      # The next entry, under a lock: lanes that share the queue never take the same one
      take() { flock "$QUEUE.lock" bash -c 'head -n 1 "$0"; sed -i 1d "$0"' "$QUEUE"; }
      while [ $(( end - $(date +%s) )) -ge 30 ]; do
        node=$(take); [ -n "$node" ] || break
        left=$(( end - $(date +%s) ))
        if [ "$node" = SANITIZER ]; then
          sanitizer $left; code=$?; [ $code -eq 0 ] || rc=1
          echo "sanitizer rc=$code $(tail -1 "$out/sanitizer.txt")" | tee -a "$out/exploits.txt"
        else
          entry "$node" $left
        fi
      done
      exit $rc
    fi
    # Node ids of the entries that need a GPU (the others run in the CPU suite), or of the entries named.
    mapfile -t nodes < <(python3 -m pytest -p no:cacheprovider --co -q tests/notebooks/test_exploits.py -m gpu \
      | grep '\[')
    if [ $# -gt 0 ]; then
      wanted=" $* "; kept=()
      for node in "${nodes[@]}"; do name=${node##*[}; [[ "$wanted" == *" ${name%]} "* ]] && kept+=("$node"); done
      nodes=("${kept[@]}")
    fi
    shard=${SHARD:-0/1}; k=${shard%/*}; n=${shard#*/}
    if [ "$n" -gt 1 ]; then
      kept=()
      for i in "${!nodes[@]}"; do [ $(( i % n )) -eq "$k" ] && kept+=("${nodes[$i]}"); done
      nodes=("${kept[@]}")
    fi
    if [ -n "${FROM:-}" ]; then
      while [ ${#nodes[@]} -gt 0 ] && [[ "${nodes[0]}" != *"[$FROM]" ]]; do nodes=("${nodes[@]:1}"); done
    fi
    for node in "${nodes[@]}"; do
      name=${node##*[}; name=${name%]}
      left=$(( end - $(date +%s) ))
      if [ $left -lt 30 ]; then echo "$name not run: time spent (start the next call with FROM=$name)" | tee -a "$out/exploits.txt"; break; fi
      entry "$node" $left
    done
    if [ $# -eq 0 ] && [ "$k" -eq 0 ]; then
      sanitizer "${SANITIZE_S:-100}" || rc=1
      tail -3 "$out/sanitizer.txt"
    fi
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
exit $rc
