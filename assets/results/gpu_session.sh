#!/usr/bin/env bash
# GPU session checks, on a machine that already has torch, Triton and CuPy but no Jupyter stack and
# no network (the project's offline-install path). Wheels for nbgrader/nbval/ipykernel are expected
# in .whl/ (built with shared/tools/offline-wheels.sh).
#   bash assets/results/gpu_session.sh STEP OUTDIR [ARGS...]
# STEP:
#   calibrate CH...     ladder doctor, then assets/results/calibrate_CH.py --runs ${RUNS:-10} per chapter
#   nbval NB_DIR...     pytest --nbval-lax on solution folders
#   pytest [ARGS...]    pytest on tests/ (ARGS default: tests)
#   check10 NB...       ladder check --repeat ${REPEAT:-10} on notebooks
#   check NB...         ladder check --isolated --json once (graded cells checked in fresh processes)
#   stability NB:CELL.. assets/results/timing-integrity/stability.py --runs ${RUNS:-10}: the same speed cell graded N times
set -uo pipefail
step=$1; out=$2; shift 2
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export JUPYTER_PATH=/tmp/site/share/jupyter  # nbconvert's templates (feedback HTML) live there
python3 -m ipykernel install --user --name python3 >/dev/null || exit 1
rc=0
case "$step" in
  calibrate)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/nvidia-smi.txt"
    python3 -m grader.cli doctor | tee "$out/doctor.txt"
    for ch in "$@"; do
      python3 "assets/results/calibrate_$ch.py" --runs "${RUNS:-10}" --out "$out/$ch-calibration.json" \
        2>&1 | tee "$out/$ch-calibration.md" || rc=1
    done
    ;;
  nbval)
    python3 -m pytest -q -p no:cacheprovider --nbval-lax "$@" 2>&1 | tee "$out/nbval.txt" || rc=1
    ;;
  pytest)
    python3 -m pytest -q -p no:cacheprovider "${@:-tests}" 2>&1 | tee "$out/pytest.txt" || rc=1
    ;;
  check10)
    python3 -m grader.cli check --repeat "${REPEAT:-10}" "$@" 2>&1 | tee "$out/check10.txt" || rc=1
    ;;
  check)
    python3 -m grader.cli check --isolated --json "$@" > "$out/check.json" 2> "$out/check.stderr" || rc=1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))
for nb in r['notebooks']:
    print(nb['path'], nb['score'], '/', nb['max_score'], round(nb['seconds']))
    for c in nb['cells']: print('  ', c['grade_id'], c['outcome'], (c['error'] or {}).get('evalue', '')[:300].replace(chr(10), ' '))" "$out/check.json" | tee "$out/check.txt"
    ;;
  stability)
    python3 assets/results/timing-integrity/stability.py --runs "${RUNS:-10}" --out "$out/stability.json" "$@" 2>&1 | tee "$out/stability.md" || rc=1
    ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
exit $rc
