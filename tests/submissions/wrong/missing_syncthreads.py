"""Exercise 3's register-blocked SGEMM with both `__syncthreads()` calls left out: threads read the
shared tiles before the other threads have finished storing them, and the next step's stores
overwrite tiles that slower warps are still reading. Nothing in the code says so, and the outcome
depends on timing: on a GPU the values are often wrong (then the visible cell fails as a wrong
result), but a lucky schedule can pass. It must be rejected by `ladder check --sanitize`:
compute-sanitizer's racecheck reports the shared-memory hazards, with the kernel and the line."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": edited(notebook_cell(CHAPTER_DIR, "sgemm-solution"),
                             ("        __syncthreads();\n", ""), count=2),
}
EXPECT = {"cell": "sgemm-visible", "reason": "sanitizer-racecheck", "device": "gpu", "sanitize": "racecheck"}
