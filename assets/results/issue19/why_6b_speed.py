"""Why did 6b's backward-speed fail under ladder grade? The cell checked in fresh processes, as grading
does (assets/results/issue15/why_cell.py), then the same check twice in this process, on the solution's
launchers. Run from the repository root after `source assets/results/gpu_env.sh`."""
import subprocess
import sys
import time

sys.path[:0] = [".", "tests"]
from grader.chapters import ch06  # noqa: E402
from submissions.build import launchers  # noqa: E402

subprocess.run([sys.executable, "assets/results/issue15/why_cell.py",
                "solutions/06_flash_attention/06_flash_attention.ipynb", "backward-speed"], check=False)
solution = launchers("ch06", "correct", ["attention-solution", "backward-solution"])
for run in range(2):
    start = time.perf_counter()
    try:
        result = ch06.check_backward_speed(solution["attention_backward"])
        print(f"== in-process run {run}: {result.speedup:.2f}x ({time.perf_counter() - start:.1f} s)")
    except Exception as exc:  # noqa: BLE001 - printed, the point of the script
        print(f"== in-process run {run}: {type(exc).__name__}: {str(exc)[:2000]}")
