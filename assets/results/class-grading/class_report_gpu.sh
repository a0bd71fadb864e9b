#!/usr/bin/env bash
# The class report of chapter 5's synthetic class (assets/results/class-grading/synthetic_class.py: 16 students),
# graded on one GPU by `ladder grade`, and a Chromium screenshot of it.
#
# On the GPU machine, with the Jupyter stack from .whl/ (gpu_measure.sh env), in two commands on one
# machine (the class takes longer than 600 s): the workspace stays in grading/ (ignored by git, so
# kept between commands), and the second command grades only the second half, its journal skipping the first:
#     bash assets/results/class-grading/class_report_gpu.sh grade 1 "$OUT"
#     bash assets/results/class-grading/class_report_gpu.sh grade 2 "$OUT"
# Each call leaves under $OUT: the report (report.html, with the feedback pages it links to), grades.csv,
# the summary `ladder grade` printed, and the GPU's name. After the second call the report covers all 16.
#
# Then here, where Debian's Chromium and Playwright are installed (.ci/run, the dev extra):
#     bash assets/results/class-grading/class_report_gpu.sh shot FILES_AT/report.html assets/results/class-grading/report-h100
# which keeps the page and its screenshot (report.png, the whole page) in that folder.
set -uo pipefail
part=$1
chapter=05_triton_matmul
case "$part" in
  grade)
    half=$2; out=$3
    source assets/results/gpu_measure.sh env "$out"
    # the time limits of tests/grading: the hanging student costs seconds, not the default minutes
    export LADDER_CELL_TIMEOUT_S=45 LADDER_FIRST_CALL_TIMEOUT_S=20 LADDER_CALL_TIMEOUT_S=20
    python3 assets/results/class-grading/synthetic_class.py grading/class05/subs --chapter "$chapter" --half "$half" || exit 1
    start=$(date +%s)
    timeout 560 python3 -m grader.cli grade grading/class05/subs --assignment "$chapter" --workspace grading/class05/ws \
        --no-progress --leaderboard initials > "$out/grade.txt" 2> "$out/grade.stderr"
    echo "rc=$? half=$half wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
    tail -30 "$out/grade.txt"
    cp grading/class05/ws/report.html grading/class05/ws/grades.csv "$out/"
    cp -r grading/class05/ws/feedback "$out/feedback"
    ;;
  shot)
    page=$2; keep=$3
    mkdir -p "$keep"
    cp "$page" "$keep/report.html"
    python3 - "$page" "$keep/report.png" <<'PY'
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

page_path, png = Path(sys.argv[1]).resolve(), sys.argv[2]
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_path.as_uri(), wait_until="load")
    sizes = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth * e.naturalHeight)")
    page.screenshot(path=png, full_page=True)
    browser.close()
print(f"{len(sizes)} figures, {sum(s > 0 for s in sizes)} rendered; console errors: {errors or 'none'}; {png}")
PY
    ;;
  *) echo "usage: $0 grade 1|2 OUT | shot REPORT.html FOLDER" >&2; exit 2 ;;
esac
