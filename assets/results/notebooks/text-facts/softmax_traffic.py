"""Chapter 7a's softmax at the speed test's size, 4,096 rows of 32,000 fp32, three ways: the solution
(tests/submissions/ch07/correct.py: pass 2 re-reads each row from memory), the same kernel with the row
held on chip (each row's float4s kept in dynamic shared memory between the passes: 125 KiB a block, one
block of 1,024 threads per SM on an H100), and torch.softmax.

    python3 assets/results/notebooks/text-facts/softmax_traffic.py time
        checks the on-chip kernel against float64 and times the three (grader.harness.timing.bench)
    ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
        --kernel-name regex:'softmax|SoftMax' --launch-skip 2 --launch-count 1 \
        python3 assets/results/notebooks/text-facts/softmax_traffic.py {solution|on_chip|torch}
        counts what DRAM moved for one launch. The counted bytes are 8 an element (one read, one write):
        1,048,576,000; what DRAM moved beyond that is the re-read that L2 did not catch."""

import sys

import numpy as np
import torch

from grader import load_kernel
from grader.harness.timing import bench
from submissions.build import launchers

ON_CHIP_SRC = r"""
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    if (mn == NEG_INF) return;
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
    m = mn;
}

__device__ __forceinline__ void warp_merge(float& m, float& s)
{
    for (int d = 16; d > 0; d /= 2) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, d);   // butterfly: every lane ends with the pair
        const float s2 = __shfl_xor_sync(0xffffffffu, s, d);
        merge(m, s, m2, s2);
    }
}

// One block per row, cols a multiple of 4; the row's float4s stay in dynamic shared memory between passes.
extern "C" __global__
void softmax_rows_on_chip(const float* x, float* out, int rows, int cols)
{
    extern __shared__ float4 row[];
    const float4* x4 = reinterpret_cast<const float4*>(x + (long long)blockIdx.x * cols);
    float4* y4 = reinterpret_cast<float4*>(out + (long long)blockIdx.x * cols);
    float m = NEG_INF, s = 0.0f;
    for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
        const float4 v = x4[j];
        row[j] = v;
        merge(m, s, v.x, 1.0f); merge(m, s, v.y, 1.0f); merge(m, s, v.z, 1.0f); merge(m, s, v.w, 1.0f);
    }
    __shared__ float wm[32], ws[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    warp_merge(m, s);
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    m = lane < warps ? wm[lane] : NEG_INF;
    s = lane < warps ? ws[lane] : 0.0f;
    warp_merge(m, s);                 // every warp merges the 32 pairs itself: no broadcast step
    const float inv = 1.0f / s;
    for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
        const float4 v = row[j];
        y4[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
    }
}
"""

which = sys.argv[1]
rows, cols = 4096, 32000
x = torch.randn(rows, cols, device="cuda") * 3
out = torch.empty_like(x)
solution = launchers("ch07", "correct", ["softmax-solution"])["softmax"]
on_chip = load_kernel(ON_CHIP_SRC, "softmax_rows_on_chip", where="ON_CHIP_SRC")
ways = {
    "solution": lambda: solution(x, out),
    "on_chip": lambda: on_chip((rows,), (1024,), (x, out, np.int32(rows), np.int32(cols)), shared_mem=cols * 4),
    "torch": lambda: torch.softmax(x, -1),
}
if which == "time":
    want = torch.softmax(x.double(), -1)
    out.fill_(float("nan"))
    ways["on_chip"]()
    torch.cuda.synchronize()
    print(f"on_chip: max relative error against float64 {((out.double() - want).abs() / want).max().item():.1e}")
    del want
    times = {name: bench(fn) for name, fn in ways.items()}
    for name, ms in times.items():
        print(f"{name:<9} {ms:.3f} ms  {8 * rows * cols / ms / 1e6:,.0f} GB/s counted  {times['torch'] / ms:.2f}x torch.softmax")
else:
    for _ in range(3):
        ways[which]()
    torch.cuda.synchronize()
    print(f"{which}: {rows} x {cols} fp32, counted bytes {8 * rows * cols:,}")
