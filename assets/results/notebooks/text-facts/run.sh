#!/usr/bin/env bash
# The figures chapters 7 and 8 quote from text-facts/h100/, and the 7b and 8b bars, measured on one GPU
# (nbclient and nbval from the wheels in .whl/):
#   bash assets/results/notebooks/text-facts/run.sh "$OUT" [PARTS]
# PARTS (default: all, in this order). On an H100 `traffic` to `check` took 344 s (h100/times.txt) and `bars`
# takes about 450 s more (its rungs' runs in assets/results/calibration/course-h100x4): past one device
# call's 10 minutes together, so give `bars` a call of its own:
#   bars       `ladder calibrate`, 10 runs a rung: bar 7b (5.4x eager, the RMSNorm baseline in Hugging Face's
#              order: the fused solution must pass, the unfused rung must fail) and bar 8b against the same
#              baseline (the solution must pass, naive_tiles must fail; the unfused block is graded by its
#              launch count, `fusion` below, and its speed is reported beside them). Each writes its bars
#              override and every run's figures (bars-7b.toml, .json; bars-8b.toml, .json), its table
#              (calibration-7b.md, calibration-8b.md) and its progress (progress-7b.txt, progress-8b.txt)
#   traffic    7a at 4,096 x 32,000: the solution, the row held on chip (shared memory) and torch.softmax,
#              timed (softmax-on-chip.txt), then Nsight Compute's DRAM bytes and L2 hit rate for each
#   cells      chapter 7's worked reductions (Harris's rungs, the butterfly) and chapter 8's host-bound
#              block (CUDA graphs, reduce-overhead) at B = 16, printed from the executed notebooks; and,
#              where nsys is installed, Nsight Systems' summaries of the eager block at B = 16 (nsys-b16.txt,
#              with b16.nsys-rep)
#   fusion     chapter 8's GPU tests: the unfused block refused for its launch count, on the direct path,
#              and the exploit entry `unfused_block` on both paths
#   check      nbval over chapters 7 and 8's solution notebooks, then `ladder check` of each (full marks)
# Not in the default (about 3 more minutes), for `assets/profiles/H100/`:
#   rungs      Nsight Compute's signature of every rung of 7a and 7b (assets/results/profiles/record_profiles.py):
#              merge rungs/profiles/H100/7a, 7b and their index.json entries into assets/profiles/H100/
# Not in the default either, the records chapters 7 and 8 now quote from the GPU the course has (one H200):
#   ladder     chapter 7's worked reductions (the notebook's reduce-measure cell) five times in each of two
#              processes (reduction_runs.py): reduction-runs.json, and reduction-summary.txt, each version's range
#              and each step's ratio over the ten runs (about 2 minutes). Copy both to text-facts/h200/
#   diagnose   exercises 7.P (a) and 8.P: Nsight Compute's signatures of the on-chip softmax, the same with four
#              loads in flight, and the solution (7a-occupancy), and of the solution's block at B = 1 and B = 64,
#              each also run back to back under a device trace (8b-host) (record_profiles.py --only
#              7a-occupancy,8b-host, about 6 minutes): diagnose/profiles/H200/ becomes assets/profiles/H200/,
#              diagnose.md (the table, the separations and which constraints each case shows) text-facts/h200/
# With those two in place, `check` (nbval and `ladder check` of both chapters, about 3 minutes) in a call of its
# own: `bash assets/results/gpu_measure.sh text-facts "$OUT" ladder,diagnose`, then `... text-facts "$OUT" check`.
# Everything lands in "$OUT/text-facts" and is tarred into "$OUT/text-facts.tar.gz" after each step, so a
# run cut short still returns what it finished.
set -uo pipefail
# `top`, not `out`: the gpu_measure.sh sourced below sets `out` (and `here`) for its own steps
top=$1; parts=${2:-bars,traffic,cells,fusion,check}
want() { [[ ",$parts," == *",$1,"* ]]; }
dest=$top/text-facts
mkdir -p "$dest"
source assets/results/gpu_measure.sh env "$dest"   # the Jupyter stack from .whl (nbclient, nbval, nbgrader)
pack() { tar -czf "$top/text-facts.tar.gz" -C "$top" text-facts; }
export PYTHONWARNINGS=ignore
here=assets/results/notebooks/text-facts
start=$SECONDS
stamp() { echo "[$1: $((SECONDS - start)) s]" | tee -a "$dest/times.txt"; }

if want bars; then
  for bar in 7b 8b; do
    python3 -m grader.cli calibrate --chapters "${bar%b}" --bars "$bar" --runs 10 --out "$dest/bars-$bar.toml" \
      2>"$dest/progress-$bar.txt" | tee "$dest/calibration-$bar.md"
    pack
  done
  stamp bars
fi
if want traffic; then
  ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  python3 "$here/softmax_traffic.py" time 2>&1 | tail -6 | tee "$dest/softmax-on-chip.txt"
  for which in solution on_chip torch; do
    timeout 180 "$ncu_bin" --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
      --kernel-name regex:'softmax|SoftMax' --launch-skip 2 --launch-count 1 --csv \
      python3 "$here/softmax_traffic.py" "$which" 2>&1 | tail -8 | tee "$dest/traffic-$which.csv"
  done
  pack
  stamp traffic
fi
if want cells; then
  python3 assets/results/notebooks/run_notebook.py solutions/07_reductions/07_reductions.ipynb "$dest" reduce-measure \
    softmax-speed norm-speed 2>&1 | tail -60 | tee "$dest/reductions.txt"
  pack
  python3 assets/results/notebooks/run_notebook.py solutions/08_should_you_write_it/08_should_you_write_it.ipynb "$dest" \
    host-measure block-speed 2>&1 | tail -40 | tee "$dest/host-bound.txt"
  # Nsight Systems where the machine has it (the course's H100 machines do not: its copy bundled with Nsight
  # Compute there writes a .qdstrm it cannot turn into a report); host-bound.txt's split of eager's time into
  # its kernels' GPU time and the rest comes from CUPTI (torch.profiler) either way
  if nsys_bin=$(command -v nsys); then
    timeout 120 "$nsys_bin" profile -t cuda,osrt -o "$dest/b16" --force-overwrite true \
      python3 "$here/host_bound_block.py" > "$dest/nsys-b16.txt" 2>&1
    timeout 60 "$nsys_bin" stats --report cuda_api_sum,cuda_gpu_kern_sum "$dest/b16.nsys-rep" 2>&1 | head -60 \
      >> "$dest/nsys-b16.txt"
    rm -f "$dest/b16.sqlite"
  else
    echo "nsys is not on this machine's PATH: no timeline recorded" > "$dest/nsys-b16.txt"
  fi
  pack
  stamp cells
fi
if want fusion; then
  python3 -m pytest -q -p no:cacheprovider -rA tests/chapters/test_ch08.py -m gpu -k "fusion" 2>&1 | tail -15 \
    | tee "$dest/gpu_tests_ch08.txt"
  python3 -m pytest -q -p no:cacheprovider -rA tests/notebooks/test_exploits.py -m gpu -k "unfused_block" 2>&1 \
    | tail -8 | tee "$dest/exploit_unfused_block.txt"
  pack
  stamp fusion
fi
if want check; then
  python3 -m pytest -q -p no:cacheprovider --nbval-lax solutions/07_reductions/07_reductions.ipynb \
    solutions/08_should_you_write_it/08_should_you_write_it.ipynb 2>&1 | tail -8 | tee "$dest/nbval.txt"
  pack
  for nb in solutions/07_reductions/07_reductions.ipynb solutions/08_should_you_write_it/08_should_you_write_it.ipynb; do
    python3 -m grader.cli check "$nb" 2>&1 | tail -25 | tee "$dest/check-$(basename "$nb" .ipynb).txt"
  done
  pack
  stamp check
fi
if want ladder; then
  rm -f "$dest/reduction-runs.json"
  for process in 1 2; do
    timeout 240 python3 "$here/reduction_runs.py" --out "$dest/reduction-runs.json" --runs 5 2>&1 | tail -25 \
      | tee -a "$dest/reduction-runs.log"
  done
  python3 "$here/reduction_runs.py" --summary "$dest/reduction-runs.json" 2>&1 | tee "$dest/reduction-summary.txt"
  pack
  stamp ladder
fi
if want diagnose; then
  timeout 540 python3 assets/results/profiles/record_profiles.py --out "$dest/diagnose" --only 7a-occupancy,8b-host \
    2>&1 | tee "$dest/diagnose.md"
  rm -rf "$dest/diagnose/notebooks" "$dest/diagnose/raw"
  pack
  stamp diagnose
fi
if want rungs; then
  python3 assets/results/profiles/record_profiles.py --out "$dest/rungs" --only 7a,7b 2>&1 | tee "$dest/rungs.md"
  rm -rf "$dest/rungs/notebooks" "$dest/rungs/raw"
  pack
  stamp rungs
fi
