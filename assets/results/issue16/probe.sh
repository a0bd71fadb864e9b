#!/usr/bin/env bash
# Issue 16, first call on a GPU machine: what Nsight Compute is there, whether it reads counters, and the
# metric names it reports for a CuPy kernel and a Triton kernel (raw CSV page), for the profiler's tables.
#   bash assets/results/issue16/probe.sh "$OUT"
set -uo pipefail
out=$1; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
which ncu; ncu --version | tee "$out/ncu_version.txt"
NCU=$(readlink -f "$(which ncu)"); echo "ncu at $NCU"; ls "$(dirname "$NCU")" "$(dirname "$NCU")/extras/python" 2>&1 | tee "$out/ncu_dir.txt"
find / -name "ncu_report.py" -not -path "*/proc/*" 2>/dev/null | tee "$out/ncu_report_paths.txt"
ncu --list-sections > "$out/sections.txt" 2>&1
ncu --list-sets > "$out/sets.txt" 2>&1
ncu --query-metrics --chip gh100 > "$out/metrics_gh100.txt" 2>&1
ncu --query-metrics-mode suffix --metrics dram__throughput,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active --chip gh100 > "$out/metric_suffixes.txt" 2>&1
cat > /tmp/probe_kernels.py <<'PY'
import torch, cupy, triton, triton.language as tl
torch.cuda.nvtx.range_push("warmup")
n = 1 << 24
a = torch.randn(n, device="cuda"); b = torch.randn(n, device="cuda"); out = torch.empty_like(a)
src = r'''extern "C" __global__ void ladder_vadd(const float* a, const float* b, float* o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = a[i] + b[i]; }
extern "C" __global__ void ladder_transpose_naive(const float* x, float* y, int n) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < n && c < n) y[c * n + r] = x[r * n + c]; }
extern "C" __global__ void ladder_transpose_tile(const float* x, float* y, int n) {
  __shared__ float t[32][32];
  int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
  t[threadIdx.y][threadIdx.x] = x[r * n + c]; __syncthreads();
  c = blockIdx.y * 32 + threadIdx.x; r = blockIdx.x * 32 + threadIdx.y;
  y[r * n + c] = t[threadIdx.x][threadIdx.y]; }'''
mod = cupy.RawModule(code=src)
torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_push("learner")
mod.get_function("ladder_vadd")(((n + 255) // 256,), (256,), (cupy.asarray(a), cupy.asarray(b), cupy.asarray(out), cupy.int32(n)))
m = 4096; x = torch.randn(m, m, device="cuda"); y = torch.empty_like(x)
mod.get_function("ladder_transpose_naive")((m // 32, m // 32), (32, 32), (cupy.asarray(x), cupy.asarray(y), cupy.int32(m)))
mod.get_function("ladder_transpose_tile")((m // 32, m // 32), (32, 32), (cupy.asarray(x), cupy.asarray(y), cupy.int32(m)))
@triton.jit
def ladder_mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a + rm[:, None] * K + (k + rk)[None, :]), tl.load(b + (k + rk)[:, None] * N + rn[None, :]))
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
A = torch.randn(2048, 2048, device="cuda", dtype=torch.float16); B = torch.randn_like(A); C = torch.empty_like(A)
ladder_mm[(16, 16)](A, B, C, 2048, 2048, 2048, 128, 128, 32)
torch.cuda.nvtx.range_pop()
torch.mm(A, B)
torch.cuda.synchronize()
print("ran")
PY
time python3 /tmp/probe_kernels.py
echo "== ncu, kernel-name filter, sections, raw csv"
time ncu --clock-control none --target-processes all --kernel-name regex:ladder_ \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
  --section WarpStateStats --section ComputeWorkloadAnalysis --section SpeedOfLight_RooflineChart \
  --export "$out/probe" --force-overwrite python3 /tmp/probe_kernels.py > "$out/ncu_run.txt" 2>&1; echo "rc $?"
tail -20 "$out/ncu_run.txt"
ncu --import "$out/probe.ncu-rep" --csv --page raw > "$out/probe_raw.csv" 2>&1; echo "csv rc $? $(wc -c < "$out/probe_raw.csv")"
ncu --import "$out/probe.ncu-rep" --csv --page details > "$out/probe_details.csv" 2>&1
ncu --import "$out/probe.ncu-rep" --print-summary none --page details > "$out/probe_details.txt" 2>&1
echo "== nvtx filter"
time ncu --clock-control none --nvtx --nvtx-include "learner/" --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  --csv --page raw python3 /tmp/probe_kernels.py > "$out/ncu_nvtx.csv" 2>&1; echo "rc $?"; head -c 3000 "$out/ncu_nvtx.csv"
echo "== ncu_report import"
NR=$(dirname "$(head -1 "$out/ncu_report_paths.txt")")
PYTHONPATH="$NR" python3 - "$out/probe.ncu-rep" <<'PY' 2>&1 | tee "$out/ncu_report_api.txt"
import sys, ncu_report
ctx = ncu_report.load_report(sys.argv[1])
for r in range(ctx.num_ranges()):
    rg = ctx.range_by_idx(r)
    for i in range(rg.num_actions()):
        a = rg.action_by_idx(i)
        names = a.metric_names()
        print(a.name(), len(names), [n for n in names if n.startswith(("dram__throughput", "gpu__time"))][:6])
        m = a.metric_by_name("gpu__time_duration.sum")
        print("  gpu__time_duration.sum", m.as_double() if m else None)
PY
echo "== non-root counter check"; id
# The device tool returns a few files only: everything goes back as one archive.
(cd "$out" && tar czf /tmp/probe.tgz . && find . -mindepth 1 -delete && mv /tmp/probe.tgz .)
