#!/usr/bin/env bash
# Class grading on 1, 2 and 4 GPUs of one machine: throughput, per-student cost, scores. On a machine of
# four GPUs, with the wheels in .whl/ and .whl-dask/ (assets/results/gpu_measure.sh says how the
# dask wheels are made), from the repository root:
#
#   bash assets/results/class-grading/run.sh class "$OUT/c1-gpus4" 4 01_vector_add 2
#   bash assets/results/class-grading/run.sh class "$OUT/c1-gpus1-part1" 1 01_vector_add 2 1/3    # 2/3, 3/3
#   (name each folder CLASS-gpusN[-partK]: the report adds up the parts of one class and GPU count; kinds named
#   after PART, e.g. `class "$OUT/correct-gpus4" 4 01_vector_add 1 "" correct`, grade only those students)
#       CLASS: assets/results/class-grading's synthetic class of CHAPTER with each student COPIES times (chapter 1:
#       2 copies, 32 students; chapter 5: 1, its 16), graded by `ladder grade` on GPUS GPUs (1: no Dask; N:
#       --gpus N), with tests/grading's short limits (cell 45 s, calls 20 s). PART K/N grades every Nth student
#       from the Kth, for a one-GPU class that does not fit one 600 s command: the parts' walls add up to the
#       class's. Keeps record.json (the wall time, each score against the expected one, each student's
#       journal seconds and where they went), the summary (grade.txt), vmstat every second (is the CPU
#       saturated?) and the GPUs' compute processes every 2 s (does any process hold a context on a GPU not its
#       worker's?).
#   bash assets/results/class-grading/run.sh student "$OUT/student"
#       ONE correct chapter-1 student: graded alone (1 GPU, no Dask), then 4 correct students on 4 GPUs at once,
#       each in a workspace of its own. Goal: a correct student's seconds with 4 workers within 10% of alone.
#       (The records' runs with the machine's check slots set by hand used a setting the grader no longer reads:
#       the slots are computed, grader/isolation/slots.py.)
#   bash assets/results/class-grading/run.sh profile "$OUT/profile"
#       the first two gradings of `student`, with py-spy sampling every process (PYSPY=1 does it for any run;
#       py-spy's wheel in .whl-dask/) and what they waited in compared (waits.py). Every run
#       also keeps ps.txt.gz: each process's state and kernel wait channel twice a second.
#   bash assets/results/class-grading/run.sh widths "$OUT/widths" [CHAPTER]
#       ONE correct student of CHAPTER (05_triton_matmul) alone, its notebook's checks in 1, 2, 3 and 4 sessions
#       (LADDER_CHECKS_AT_ONCE), then the first width again: what each session more saves a student alone (the
#       default, checks_at_once in grading.toml's [default], is chosen from it)
#   python3 assets/results/class-grading/scaling.py report DIR/*/record.json > scaling.md
#       (anywhere, on the records that came back) every run's wall time and speed-up against the 1-GPU
#       parts of the same class, per student the seconds alone and in each class, scores identical.
set -uo pipefail
mode=$1; out=$2; shift 2
source assets/results/gpu_measure.sh env "$out"
here=assets/results/class-grading   # after the set-up, which sets its own `here` (and `step`, `out`)
export LADDER_CELL_TIMEOUT_S=45 LADDER_FIRST_CALL_TIMEOUT_S=20 LADDER_CALL_TIMEOUT_S=20

# Once a machine, before its first timed grading: read the shared libraries of torch, Triton, CuPy and the
# NVIDIA wheels into the page cache, and start CUDA once on every GPU. Why: a fresh machine's disk is cold, and
# whichever grading runs first pays for reading them (the four-GPU class graded first on a fresh 4 x H200 read
# 2.3 GB in its first 30 s, its first four students 1.4-1.6x as slow as the same students later), so runs
# compared with each other must all start warm. Untimed; what it read is printed into the run's log.
warm_once() {
    [ -e /tmp/.ladder-class-warm ] && return 0
    python3 - <<'PY'
import importlib.util, pathlib, time
import torch
start, read = time.time(), 0
roots = {pathlib.Path(importlib.import_module(name).__file__).parent
         for name in ("torch", "triton", "cupy") if importlib.util.find_spec(name)}
nvidia = importlib.util.find_spec("nvidia")
roots |= {pathlib.Path(p) for p in (nvidia.submodule_search_locations if nvidia else [])}
for root in roots:
    for lib in root.rglob("*.so*"):
        with open(lib, "rb") as f:
            while chunk := f.read(1 << 24):
                read += len(chunk)
for i in range(torch.cuda.device_count()):
    torch.empty(1, device=f"cuda:{i}")
    torch.cuda.synchronize(i)
print(f"machine warmed: {read / 1e9:.2f} GB of shared libraries read, CUDA started on "
      f"{torch.cuda.device_count()} GPU(s), {time.time() - start:.1f} s (untimed)")
PY
    [ $? = 0 ] && touch /tmp/.ladder-class-warm
}

# grade DIR GPUS CHAPTER COPIES [PART] [ONLY...]: one class graded into DIR, with its records
grade() {
    local dir=$1 gpus=$2 chapter=$3 copies=$4 part=${5:-}; shift 5 2>/dev/null || shift $#
    local only=("$@")
    mkdir -p "$dir"
    python3 $here/scaling.py build "$dir/subs" --chapter "$chapter" --copies "$copies" ${part:+--part "$part"} \
        ${only:+--only "${only[@]}"} || return 1
    python3 $here/scaling.py expected --chapter "$chapter" --copies "$copies" ${part:+--part "$part"} \
        ${only:+--only "${only[@]}"} > "$dir/expected.json"
    local extra=(); [ "$gpus" -gt 1 ] && extra=(--gpus "$gpus")
    warm_once
    vmstat -t 1 > "$dir/vmstat.txt" 2>&1 & local vm=$!
    (while sleep 2; do date +%T; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader; done) \
        > "$dir/gpu_apps.txt" 2>&1 & local apps=$!
    # What every process is doing, twice a second: its state and, asleep, the kernel function it waits in
    (while sleep 0.5; do echo "@ $(date +%s.%N)"; ps -e -o pid=,ppid=,stat=,wchan:32=,args= | cut -c1-200; done) \
        > "$dir/ps.txt" 2>&1 & local sampler=$!
    local start; start=$(date +%s.%N)
    timeout "${CLASS_LIMIT_S:-86400}" python3 -m grader.cli grade "$dir/subs" --assignment "$chapter" \
        --workspace "$dir/ws" --no-progress "${extra[@]}" > "$dir/grade.txt" 2> "$dir/grade.stderr" &
    local grading=$!
    # PYSPY=1: py-spy (its wheel in .whl-dask/) samples the grading and every process under it, idle stacks too,
    # without stopping them. Attached rather than wrapping the command, so that a machine that forbids it costs
    # this record, not the grading.
    [ -n "${PYSPY:-}" ] && py-spy record --pid $grading --subprocesses --idle --nonblocking --rate 20 --format raw \
        -o "$dir/pyspy.txt" > "$dir/pyspy.log" 2>&1 &
    wait $grading
    local rc=$? wall; wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
    sleep 2   # py-spy writes its file once the process it follows is gone
    kill $vm $apps $sampler 2>/dev/null
    gzip -f "$dir/ps.txt"; [ -e "$dir/pyspy.txt" ] && gzip -f "$dir/pyspy.txt"
    echo "rc=$rc gpus=$gpus chapter=$chapter copies=$copies part=${part:-all} wall_s=$wall" | tee "$dir/wall.txt"
    python3 $here/scaling.py record "$dir/ws" "$chapter" "$dir/expected.json" "$wall" > "$dir/record.json"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('scores as expected:', r['scores_as_expected'])" "$dir/record.json"
    sed -n '/^where the time went/,$p' "$dir/grade.txt"
    gzip -f "$dir/vmstat.txt" "$dir/gpu_apps.txt"
    rm -rf "$dir/subs" "$dir/ws/source" "$dir/ws/release" "$dir/ws/submitted" "$dir/ws/executed"
    (cd "$dir" && tar czf ws.tgz ws && rm -rf ws)
}

case "$mode" in
  class) grade "$out" "${1:?GPUS}" "${2:-01_vector_add}" "${3:-2}" "${4:-}" "${@:5}" ;;
  student)
    grade "$out/correct-gpus1" 1 01_vector_add 1 1/4 correct        # correct-1 alone
    grade "$out/correct-gpus4" 4 01_vector_add 1 "" correct          # correct-1..4, one a GPU, at once
    python3 $here/scaling.py report "$out"/*/record.json | tee "$out/student.md"
    ;;
  profile)
    # Where a correct student's time goes alone and four at once: the same two gradings as the first of
    # `student`, sampled by py-spy and ps, then what the processes waited in, side by side (waits.py)
    PYSPY=1 grade "$out/correct-gpus1" 1 01_vector_add 1 1/4 correct
    PYSPY=1 grade "$out/correct-gpus4" 4 01_vector_add 1 "" correct
    python3 $here/scaling.py report "$out"/*/record.json > "$out/student.md"
    python3 $here/waits.py "$out/correct-gpus1" "$out/correct-gpus4" | tee "$out/waits.md"
    ;;
  widths)
    # One correct student of CHAPTER (default 05_triton_matmul) alone on one GPU, its notebook's checks in 1, 2, 3
    # and 4 sessions (LADDER_CHECKS_AT_ONCE; WIDTHS narrows), then the first width again, to see what the
    # machine's warming changed
    chapter=${1:-05_triton_matmul}; tag=c${chapter:1:1}correct; widths=(${WIDTHS:-1 2 3 4})
    for w in "${widths[@]}"; do LADDER_CHECKS_AT_ONCE=$w grade "$out/$tag-gpus1-w$w" 1 "$chapter" 1 1/4 correct; done
    LADDER_CHECKS_AT_ONCE=${widths[0]} grade "$out/$tag-gpus1-w${widths[0]}again" 1 "$chapter" 1 1/4 correct
    python3 $here/scaling.py report "$out"/*/record.json | tee "$out/widths.md"
    ;;
  *) echo "unknown mode $mode: class, student, profile or widths"; exit 2 ;;
esac
