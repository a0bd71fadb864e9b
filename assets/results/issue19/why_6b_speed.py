"""Why did 6b's backward-speed fail under ladder grade? The isolated check of that one cell, and the same
check in this process, on the solution notebook."""
import sys, time, json
sys.path[:0] = ["/tmp/site", ".", "tests"]
from grader.isolation.isolate import check_cell
nb = "solutions/06_flash_attention/06_flash_attention.ipynb"
for cell in ("backward-speed",):
    t = time.perf_counter()
    v = check_cell(nb, cell)
    print(f"== isolated {cell}: passed={v.passed} reason={v.reason} {time.perf_counter()-t:.1f}s")
    print(v.message[:3000]); print("-- stdout:"); print(v.stdout[-3000:])
from submissions.build import launchers
sol = launchers("ch06", "correct", ["backward-solution"]) if False else None
from grader.chapters import ch06
sol = launchers("ch06", "correct", ["attention-solution", "backward-solution"])
for i in range(2):
    t = time.perf_counter()
    try:
        r = ch06.check_backward_speed(sol["attention_backward"])
        print(f"== in-process run {i}: {r.speedup if hasattr(r,'speedup') else r} {time.perf_counter()-t:.1f}s")
    except Exception as exc:
        print(f"== in-process run {i}: {type(exc).__name__}: {str(exc)[:2000]}")
