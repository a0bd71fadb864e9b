#!/usr/bin/env bash
# One GPU session's worth of checks for chapter 1, on a machine that already has torch, Triton and
# CuPy but no Jupyter stack and no network (the project's offline-install path).
#   bash assets/results/gpu_session.sh STEP OUTDIR
# STEP: calibrate | pytest | check10. Wheels for nbgrader/nbval/ipykernel are expected in .whl/
# (built with shared/tools/offline-wheels.sh).
set -uo pipefail
step=$1; out=$2
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -m ipykernel install --user --name python3 >/dev/null || exit 1
case "$step" in
  calibrate)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/nvidia-smi.txt"
    python3 -m grader.cli doctor | tee "$out/doctor.txt"
    python3 assets/results/calibrate_ch01.py --runs 10 --out "$out/ch01-calibration.json" | tee "$out/calibration.md"
    python3 -m pytest -q -p no:cacheprovider --nbval-lax solutions/01_vector_add 2>&1 | tee "$out/nbval.txt"
    ;;
  pytest)
    python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$out/pytest.txt"
    ;;
  check10)
    python3 -m grader.cli check --repeat 10 solutions/01_vector_add/01_vector_add.ipynb 2>&1 | tee "$out/check10.txt"
    ;;
esac
