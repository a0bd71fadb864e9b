"""7a's solution without the `__syncthreads()` between the warps writing their (max, sum) pairs to shared
memory and warp 0 reading them: warp 0 can read a slot before the warp that owns it has written it. The
result depends on timing, and is often right, so value checks alone cannot be trusted to catch it. It
must be rejected by `ladder check --sanitize`: racecheck reports the shared-memory hazard between the
write and the read, with the kernel and the lines."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"
CELLS = {
    "softmax-solution": edited(notebook_cell(CHAPTER_DIR, "softmax-solution"), (
        "    if (lane == 0) { wm[warp] = m; ws[warp] = s; }\n    __syncthreads();\n",
        "    if (lane == 0) { wm[warp] = m; ws[warp] = s; }\n")),
}
EXPECT = {"cell": "softmax-visible", "reason": "sanitizer-racecheck", "device": "gpu", "sanitize": "racecheck"}
