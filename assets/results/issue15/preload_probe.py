"""Which imports cost what in a fresh interpreter on this machine, and whether any of them initialises
CUDA's driver (a child forked after cuInit cannot use the GPU); then a forked child runs torch, CuPy and Triton.

    python3 assets/results/issue15/preload_probe.py MODULE [MODULE ...]
"""
import ctypes, os, sys, time

def cuda_initialised():
    maps = open("/proc/self/maps").read()
    if "libcuda.so" not in maps:
        return "libcuda not loaded"
    lib = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    rc = lib.cuCtxGetCurrent(ctypes.byref(ctx))
    return "NOT initialised (cuCtxGetCurrent=3)" if rc == 3 else f"initialised (cuCtxGetCurrent={rc})"

names = sys.argv[1:]
for name in names:
    t = time.perf_counter()
    __import__(name)
    print(f"import {name}: {time.perf_counter() - t:.2f} s; CUDA driver {cuda_initialised()}", flush=True)
pid = os.fork()
if pid == 0:
    import torch, cupy, triton, triton.language as tl
    @triton.jit
    def k(x, n: tl.constexpr):
        i = tl.arange(0, n)
        tl.store(x + i, tl.load(x + i) * 2)
    x = torch.ones(16, device="cuda")
    k[(1,)](x, 16)
    y = cupy.arange(4) * 3
    torch.cuda.synchronize()
    print("forked child: torch, cupy and a Triton kernel ran:", float(x.sum()), int(y.sum()), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child exit status", status)
