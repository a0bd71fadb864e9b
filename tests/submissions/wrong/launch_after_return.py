"""5a's launcher hands the launch to a worker thread started when its cell ran (not during the call, so
no thread the call started is left running) and returns at once; the thread waits 50 ms, so that the
call is long over, and then launches the solution's kernel, which writes the right values a little
later. A timer around the call measures nothing. It must be rejected as not using its kernel: the call
itself launched none, and a kernel launched after a call returned is no part of it."""
from submissions.wrong import CH05, CH05_LAUNCH, edited, notebook_cell

CHAPTER_DIR = CH05
CELLS = {
    "matmul-solution": edited(
        notebook_cell(CH05, "matmul-solution"),
        ("\n\ndef matmul(a, b, out):", '''
import queue
import threading
import time

_work = queue.Queue()


def _launcher():
    while True:
        launch = _work.get()
        time.sleep(0.05)   # well after the call has returned
        launch()


threading.Thread(target=_launcher, daemon=True).start()   # started with the cell, not by a call


def matmul(a, b, out):'''),
        (CH05_LAUNCH, '''\
    _work.put(lambda: matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                          b.stride(1), out.stride(0), out.stride(1)))
''')),
}
EXPECT = {"cell": "matmul-visible", "reason": "kernel-unused", "device": "cpu"}
