#!/usr/bin/env bash
# Chapter 7 on a GPU machine (the device tool's `run`, with .whl carried for nbclient):
#   bash assets/results/issue17_ch07_gpu.sh "$OUT" [RUNS] [PARTS]
# PARTS (default calibrate,tests,exploits,sanitize,notebook,profile), in this order:
#   calibrate  the RUNS-run calibration of bars 7a, 7b and 7-stretch (default 10), one JSON per exercise
#   tests      chapter 7's GPU tests
#   exploits   the exploit entries of chapter 7 that need a GPU, and the softmax race under racecheck
#              (both build students from the release in course/)
#   sanitize   `ladder check --sanitize` on the solution notebook (memcheck, racecheck, synccheck)
#   notebook   the solution notebook executed with nbclient (its printed figures: reductions, occupancy,
#              softmax against row length)
#   profile    `ladder profile` on the solution's 7a and 7b
# Everything lands in "$OUT/ch07" and is tarred into "$OUT/ch07.tar.gz" after each step, so a run cut
# short still returns what it finished.
set -uo pipefail
out=$1; runs=${2:-10}; parts=${3:-calibrate,tests,exploits,sanitize,notebook,profile}
want() { [[ ",$parts," == *",$1,"* ]]; }
dest=$out/ch07
mkdir -p "$dest"
source "$(dirname "$0")/gpu_env.sh"   # the Jupyter stack from .whl (nbclient, nbgrader for the exploit suite)
pack() { tar -czf "$out/ch07.tar.gz" -C "$out" ch07; }
export PYTHONWARNINGS=ignore

if want calibrate; then
  for part in 7a 7b 7c; do
    python3 assets/results/calibrate_ch07.py --runs "$runs" --only "$part " --out "$dest/calibration-$part.json" \
      2>&1 | tee "$dest/calibration-$part.md"
    pack
  done
fi
if want tests; then
  python3 -m pytest -q -p no:cacheprovider -rA tests/chapters/test_ch07.py -m "gpu" 2>&1 | tail -30 \
    | tee "$dest/gpu_tests.txt"
  pack
fi
if want exploits; then
  python3 -m pytest -q -p no:cacheprovider -rA tests/notebooks/test_exploits.py -m gpu \
    -k "softmax_torch_launcher or softmax_pow2_only or rmsnorm_no_eps" 2>&1 | tail -15 | tee "$dest/exploits.txt"
  python3 -m pytest -q -p no:cacheprovider -rA tests/sanitizer/test_sanitize.py -k "softmax" 2>&1 | tail -15 \
    | tee "$dest/race.txt"
  pack
fi
if want sanitize; then
  python3 -m grader.cli check --sanitize solutions/07_reductions/07_reductions.ipynb 2>&1 | tail -40 \
    | tee "$dest/sanitize.txt"
  pack
fi
if want notebook; then
  python3 assets/results/run_notebook.py solutions/07_reductions/07_reductions.ipynb "$dest" reduce-measure occupancy-compare length-plot softmax-speed norm-speed stretch-check 2>&1 | tail -60 | tee "$dest/notebook.txt"
pack
fi
if want profile; then
  for ex in 7a 7b; do
    timeout 300 python3 -m grader.cli profile solutions/07_reductions/07_reductions.ipynb --exercise $ex 2>&1 | tail -30 \
      | tee "$dest/profile-$ex.txt"
  done
  pack
fi
