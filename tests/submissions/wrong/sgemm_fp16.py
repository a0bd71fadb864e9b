"""Exercise 3's register-blocked SGEMM with its shared-memory tiles stored as fp16 ("half the shared
memory, half the traffic"): every element of A and B is rounded to fp16 on its way in, then widened
back for fp32 multiply-adds. The answer loses about three decimal digits (fp16 keeps 11 significant
bits): far outside the fp32 tolerance at every K, so it must be rejected as a wrong result."""
from submissions.wrong import edited, notebook_cell

CHAPTER_DIR = "03_tiling"
CELLS = {
    "sgemm-solution": edited(
        notebook_cell(CHAPTER_DIR, "sgemm-solution"),
        ("#define BM 128  // rows of C per block", "#include <cuda_fp16.h>\n\n#define BM 128  // rows of C per block"),
        ("    __shared__ float As[BK][BM + 4];\n    __shared__ float Bs[BK][BN];",
         "    __shared__ __half As[BK][BM + 4];  // fp16 tiles: half the shared memory\n"
         "    __shared__ __half Bs[BK][BN];"),
        ("(r < M && c < K) ? A[(long long)r * K + c] : 0.0f;", "__float2half((r < M && c < K) ? A[(long long)r * K + c] : 0.0f);"),
        ("(r < K && c < N) ? B[(long long)r * N + c] : 0.0f;", "__float2half((r < K && c < N) ? B[(long long)r * N + c] : 0.0f);"),
        ("a_frag[i] = As[k][trow * TM + i];", "a_frag[i] = __half2float(As[k][trow * TM + i]);"),
        ("b_frag[j] = Bs[k][tcol * TN + j];", "b_frag[j] = __half2float(Bs[k][tcol * TN + j]);")),
}
EXPECT = {"cell": "sgemm-visible", "reason": "wrong-result", "device": "gpu"}
