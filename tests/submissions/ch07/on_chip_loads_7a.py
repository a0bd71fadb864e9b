"""7a with the row held on chip (on_chip_7a.py), its first pass issuing four float4 loads per thread before it
merges any of them: one block of 1,024 threads per SM still, each thread with 64 bytes in flight instead of 16.
The next rung exercise 7.P (a) names for the on-chip kernel (assets/profiles/H200/7a-occupancy); correct
everywhere."""
from submissions.ch07.on_chip_7a import CHAPTER_DIR, softmax_cell  # noqa: F401  (CHAPTER_DIR: build() reads it)

FOUR_LOADS_IN_FLIGHT = """
    for (int base = threadIdx.x; base < n4; base += 4 * blockDim.x) {
        float4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {                 // four loads issued before any is merged
            const int j = base + k * blockDim.x;
            if (j < n4) v[k] = x4[j];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int j = base + k * blockDim.x;
            if (j < n4) {
                row[j] = v[k];
                merge(m, s, v[k].x, 1.0f); merge(m, s, v[k].y, 1.0f); merge(m, s, v[k].z, 1.0f); merge(m, s, v[k].w, 1.0f);
            }
        }
    }
"""

CELLS = {"softmax-solution": softmax_cell(FOUR_LOADS_IN_FLIGHT)}
