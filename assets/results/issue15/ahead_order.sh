#!/usr/bin/env bash
# Ran at commit 3133a2c (since reverted). Same machine, same chapter: checks ahead started from the notebook's last cell (the grader then)
# against notebook order (a copy of the tree with that one line changed), alternately, ROUNDS times each.
# Then each of chapter 6's backward-pass checks alone, in fresh processes, one after another with one
# Triton cache (assets/results/issue15/why_cell.py), to see what a check costs without neighbours.
#   bash assets/results/issue15/ahead_order.sh OUT [CHAPTER] [ROUNDS]
set -uo pipefail
out=$1; ch=${2:-06_flash_attention}; rounds=${3:-2}
source "$(dirname "$0")/../gpu_env.sh"
fwd=/tmp/notebook-order
rm -rf "$fwd" && mkdir -p "$fwd" && cp -r $(ls -A | grep -vx ".whl\|.git") "$fwd"/
sed -i 's/self._submit(list(reversed(self.checks.values())))/self._submit(list(self.checks.values()))/' "$fwd/grader/notebooks/ahead.py"
grep -q "self._submit(list(self.checks.values()))" "$fwd/grader/notebooks/ahead.py" || { echo "patch failed"; exit 1; }
for r in $(seq 1 "$rounds"); do
  python3 assets/results/issue15/grading_time.py --out "$out/last-first-$r" --chapters "$ch" > "$out/last-first-$r.log" 2>&1
  head -1 "$out/last-first-$r.log"
  (cd "$fwd" && PYTHONPATH=/tmp/site:$fwd:$fwd/tests python3 assets/results/issue15/grading_time.py --out "$out/notebook-order-$r" --chapters "$ch" > "$out/notebook-order-$r.log" 2>&1)
  head -1 "$out/notebook-order-$r.log"
done
if [ "$ch" = 06_flash_attention ]; then
  export TRITON_CACHE_DIR=$(mktemp -d)
  python3 assets/results/issue15/why_cell.py solutions/06_flash_attention/06_flash_attention.ipynb \
      backward-visible backward-hidden backward-gradcheck backward-memory backward-hidden 2>&1 | grep "^==" | tee "$out/backward-alone.txt"
fi
