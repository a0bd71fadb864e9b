#!/usr/bin/env bash
# Issue 16 (profiling) on a GPU machine, through the device tool's `run` with .whl carried:
#   bash assets/results/issue16_gpu.sh "$OUT" [EXERCISES]
# records every rung's profile (assets/results/issue16/record_profiles.py), runs `ladder profile` on a
# solution notebook and the GPU tests of tests/profiling, and returns everything as one archive.
set -uo pipefail
out=$1; only=${2:-}
source "$(dirname "$0")/gpu_env.sh"
python3 assets/results/issue16/record_profiles.py --out "$out/rec" ${only:+--only "$only"} 2>&1 | tee "$out/signatures.md"
python3 -m grader.cli profile solutions/02_coalescing/02_coalescing.ipynb --exercise 2 --out "$out/cli" 2>&1 | tee "$out/ladder_profile_2.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/profiling 2>&1 | tee "$out/pytest_gpu.txt"
rm -rf "$out/rec/notebooks"
(cd "$out" && tar czf /tmp/issue16.tgz . && find . -mindepth 1 -delete && mv /tmp/issue16.tgz .)
