"""Chapter 8's eager block at the profile's size (B = 16), twenty calls after a warm-up, for Nsight Systems:

    nsys profile -t cuda,osrt -o OUT/b16 python3 assets/results/notebooks/text-facts/host_bound_block.py
    nsys stats --report cuda_api_sum,cuda_gpu_kern_sum OUT/b16.nsys-rep

The timeline shows whether the GPU waits between kernels (host-bound) or not; the two summaries give the
host's time in cudaLaunchKernel against the kernels' GPU time."""

import torch

from grader.chapters import ch08

gen = torch.Generator(device="cuda").manual_seed(0)
inputs = ch08.make_inputs(ch08.PROFILE_SIZE, gen, "cuda")
for _ in range(5):
    ch08.eager_block(*inputs)
torch.cuda.synchronize()
for _ in range(20):
    ch08.eager_block(*inputs)
torch.cuda.synchronize()
print(f"eager block, {ch08.describe(ch08.PROFILE_SIZE)}: 20 calls traced")
