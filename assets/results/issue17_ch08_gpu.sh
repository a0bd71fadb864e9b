#!/usr/bin/env bash
# Chapter 8 on a GPU machine (the device tool's `run`, with .whl carried for nbclient):
#   bash assets/results/issue17_ch08_gpu.sh "$OUT" [RUNS] [PARTS]
# PARTS (default record,calibrate,tests,notebook), in this order:
#   record     the eager block's torch.profiler table, its ops timed one by one (ops.json) and the code
#              Inductor generates for it, at ch08.PROFILE_SIZE
#   calibrate  the RUNS-run calibration of bar 8b (default 10), one rung at a time, one JSON per rung
#   tests      chapter 8's GPU tests that are not slow
#   notebook   the solution notebook executed with nbclient
# Everything lands in "$OUT/ch08" and is tarred into "$OUT/ch08.tar.gz" after each step, so a run cut
# short still returns what it finished.
set -uo pipefail
out=$1; runs=${2:-10}; parts=${3:-record,calibrate,tests,notebook}
want() { [[ ",$parts," == *",$1,"* ]]; }
dest=$out/ch08
mkdir -p "$dest"
if want notebook; then
  source "$(dirname "$0")/gpu_env.sh"   # the Jupyter stack from .whl, for nbclient
else
  export PYTHONPATH=$PWD:$PWD/tests PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$dest/gpu.txt"
fi
pack() { tar -czf "$out/ch08.tar.gz" -C "$out" ch08; }
export PYTHONWARNINGS=ignore

if want record; then
python3 - "$dest" <<'PY' 2>&1 | tee "$dest/record.log"
import json, sys
from pathlib import Path
import torch
from grader.chapters import ch08
from grader.cuda.gpu import gpu_info
from grader.harness.ceilings import ceilings
dest = Path(sys.argv[1])
(dest / "profile.txt").write_text(ch08.record_profile())
costs = ch08.measure_ops()
ceil = ceilings()
(dest / "ops.json").write_text(json.dumps({
    "gpu": gpu_info().name, "size": list(ch08.SPEED_SIZE), "torch": torch.__version__,
    "ceilings": {"copy_gbps": ceil.copy_gbps, "fp16_tflops": ceil.fp16_tflops},
    "ops": [c.__dict__ for c in costs]}, indent=1))
code = ch08.record_inductor_code()
(dest / "inductor_code.py").write_text(code)
ch08.summarize_inductor(code)
for row in ch08.profile_rows(costs, ceil.copy_gbps, ceil.fp16_tflops):
    print(row.describe())
PY
pack
fi
if want calibrate; then
  for rung in solution naive_tiles unfused; do
    python3 assets/results/calibrate_ch08.py --runs "$runs" --only "($rung)" --out "$dest/calibration-$rung.json" \
      2>&1 | tee "$dest/calibration-$rung.md"
    pack
  done
fi
if want tests; then
  python3 -m pytest -q -p no:cacheprovider -rA tests/chapters/test_ch08.py -m "gpu and not slow" 2>&1 | tail -30 \
    | tee "$dest/gpu_tests.txt"
  pack
fi
if want notebook; then
  python3 assets/results/run_notebook.py solutions/08_should_you_write_it/08_should_you_write_it.ipynb "$dest" 2>&1 | tail -60 | tee "$dest/notebook.txt"
pack
fi
