"""7a with the row held on chip, the chapter's stretch goal "One read": pass 1 stores each float4 of the row
in dynamic shared memory as it merges it, pass 2 reads it from there, so memory is read once. At 4,096 x 32,000
the row takes 125 KiB of shared memory: one block of 1,024 threads per SM, half the warps the solution keeps
resident. Rows that are not a multiple of 4 floats, or too long for a block's shared memory, take the
solution's two passes over memory. Correct everywhere.

The rung exercise 7.P (a) diagnoses (assets/profiles/H200/7a-occupancy): each thread has one 16-byte load in
flight at a time (the first pass's loop issues its load, then merges: tests/chapters/test_ch07.py reads the
machine code), so the SM holds half the solution's bytes in flight. On an H100 the same kernel took 0.460 ms
against the solution's 0.524 ms and streamed 2.14 TB/s from DRAM against 2.96
(assets/results/notebooks/text-facts/h100/softmax-on-chip.txt, traffic.csv)."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "07_reductions"

# Pass 1 of the kernel below: one float4 a thread at a time, stored on chip and merged.
ONE_LOAD_AT_A_TIME = """
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        const float4 v = x4[j];
        row[j] = v;
        merge(m, s, v.x, 1.0f); merge(m, s, v.y, 1.0f); merge(m, s, v.z, 1.0f); merge(m, s, v.w, 1.0f);
    }
"""

ON_CHIP_KERNEL = """
// One block per row, cols a multiple of 4: the row's float4s stay in dynamic shared memory between the passes.
extern "C" __global__
void softmax_rows_on_chip(const float* x, float* out, int rows, int cols)
{
    extern __shared__ float4 row[];
    const float4* x4 = reinterpret_cast<const float4*>(x + (long long)blockIdx.x * cols);
    float4* y4 = reinterpret_cast<float4*>(out + (long long)blockIdx.x * cols);
    const int n4 = cols / 4;
    float m = NEG_INF, s = 0.0f;
PASS_ONE
    __shared__ float wm[32], ws[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    warp_merge(m, s);
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < warps ? wm[lane] : NEG_INF;
        s = lane < warps ? ws[lane] : 0.0f;
        warp_merge(m, s);
        if (lane == 0) { wm[0] = m; ws[0] = s; }
    }
    __syncthreads();
    m = wm[0];
    const float inv = 1.0f / ws[0];
    for (int j = threadIdx.x; j < n4; j += blockDim.x) {
        const float4 v = row[j];
        y4[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
    }
}
"""

LAUNCHER = '''
from grader.cuda.gpu import arch_here

on_chip_kernel = load_kernel(SOFTMAX_SRC, "softmax_rows_on_chip", where="SOFTMAX_SRC")
# The most shared memory a block may ask for on this GPU (227 KiB on sm_90), less the kernel's own 256 bytes.
ON_CHIP_BYTES = arch_here().max_shared_per_block - 256 if arch_here() else 0


def softmax(x, out):
    rows, cols = x.shape
    threads = min(1024, 32 * max(1, -(-cols // 128)))
    if cols % 4 == 0 and cols * 4 <= ON_CHIP_BYTES:
        on_chip_kernel((rows,), (threads,), (x, out, np.int32(rows), np.int32(cols)), shared_mem=cols * 4)
    else:
        softmax_kernel((rows,), (threads,), (x, out, np.int32(rows), np.int32(cols)))
'''


def softmax_cell(pass_one: str) -> str:
    """The solution's cell with the on-chip kernel added to SOFTMAX_SRC, its first pass `pass_one`, and a
    launcher that takes it wherever the row fits."""
    source = edited(notebook_cell(CHAPTER_DIR, "softmax-solution"),
                    ('"""\nsoftmax_kernel = load_kernel(', ON_CHIP_KERNEL.replace("PASS_ONE", pass_one.strip("\n"))
                     + '"""\nsoftmax_kernel = load_kernel('))
    head, _ = source.split("\ndef softmax(x, out):")
    return head + LAUNCHER


CELLS = {"softmax-solution": softmax_cell(ONE_LOAD_AT_A_TIME)}
