"""Chapter 7a probe 2: the online softmax with 16-byte loads (rows whose length is a multiple of 4) against
torch.softmax at long rows, to choose 7a's timing size. PYTHONPATH=$PWD python3 assets/results/ch07/softmax_probe.py"""

import json

import numpy as np
import torch

from grader import load_kernel
from grader.harness.timing import bench

SRC = r"""
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    if (mn == NEG_INF) return;                       // both empty
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);   // exp(-inf) = 0: an empty side adds nothing
    m = mn;
}

__device__ __forceinline__ void add(float& m, float& s, float v)
{
    const float mn = fmaxf(m, v);
    s = s * __expf(m - mn) + __expf(v - mn);
    m = mn;
}

extern "C" __global__
void softmax_v4(const float* x, float* out, int rows, int cols)
{
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = out + (long long)blockIdx.x * cols;
    float m = NEG_INF, s = 0.0f;
    const bool vec = (cols % 4) == 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 v = x4[j];
            add(m, s, v.x); add(m, s, v.y); add(m, s, v.z); add(m, s, v.w);
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) add(m, s, xr[j]);
    }
    for (int off = 16; off > 0; off >>= 1)
        merge(m, s, __shfl_down_sync(0xffffffffu, m, off), __shfl_down_sync(0xffffffffu, s, off));
    __shared__ float wm[32], ws[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < warps ? wm[lane] : NEG_INF;
        s = lane < warps ? ws[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1)
            merge(m, s, __shfl_down_sync(0xffffffffu, m, off), __shfl_down_sync(0xffffffffu, s, off));
        if (lane == 0) { wm[0] = m; ws[0] = s; }
    }
    __syncthreads();
    m = wm[0];
    const float inv = 1.0f / ws[0];
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 v = x4[j];
            y4[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __expf(xr[j] - m) * inv;
    }
}
"""
kernel = load_kernel(SRC, "softmax_v4")


def softmax(x, out, threads):
    rows, cols = x.shape
    kernel((rows,), (threads,), (x, out, np.int32(rows), np.int32(cols)))


gen = torch.Generator(device="cuda").manual_seed(0)
for rows, cols in ((8192, 4096), (4096, 8192), (2048, 16384), (4096, 16384), (2048, 32768), (4096, 32768),
                   (1024, 65536), (2048, 50257), (2048, 50260), (512, 131072)):
    x = torch.randn(rows, cols, generator=gen, device="cuda") * 3
    out = torch.full_like(x, float("nan"))
    want = torch.softmax(x.double(), -1)
    row = {"rows": rows, "cols": cols, "torch_ms": (t := bench(lambda: torch.softmax(x, -1)))}
    row["torch_gbps"] = 8 * rows * cols / t / 1e6
    for threads in (256, 512, 1024):
        out.fill_(float("nan"))
        softmax(x, out, threads)
        torch.cuda.synchronize()
        rel = ((out.double() - want).abs() / want).max().item()
        row[threads] = [round(t / bench(lambda: softmax(x, out, threads)), 3), f"{rel:.1e}"]
    print(json.dumps(row), flush=True)
    del x, out, want
